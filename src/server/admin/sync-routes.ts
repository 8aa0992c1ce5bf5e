import { type Context, Hono } from "hono";
import { z } from "zod";
import {
  BackfillQueue,
  progressOf,
  ResyncInputError,
  type ResyncTarget,
  resync,
} from "../../backfill/index.ts";
import { errorResponse } from "../../lib/http-errors.ts";
import { INSTANT_FORMS, parseInstantText } from "../../lib/instant.ts";
import { ShopNotConnectedError } from "../../shopify/index.ts";
import type { ShopRecord } from "../../store/index.ts";
import { ShopDomain } from "../../sync/source-order.ts";
import type { AdminDeps } from "./admin-deps.ts";

const instant = z
  .string()
  .refine((v) => parseInstantText(v) !== null, `must be ${INSTANT_FORMS}`)
  .transform((v) => new Date(parseInstantText(v) ?? 0).toISOString());

/** Exactly one of order, since (with an optional until, after it) or all: true. */
const ResyncBody = z.union([
  z.object({ order: z.string().min(1) }).strict(),
  z
    .object({ since: instant, until: instant.optional() })
    .strict()
    .refine((b) => b.until === undefined || b.until > b.since, {
      path: ["until"],
      message: "must be after since",
    }),
  z.object({ all: z.literal(true) }).strict(),
]);

const BackfillBody = z
  .object({
    since: instant
      .refine((since) => Date.parse(since) <= Date.now(), "must not be in the future")
      .optional(),
  })
  .strict();

function invalid(
  c: Context,
  error: z.ZodError,
  message = "give exactly one of order, since (with an optional until) or all: true",
) {
  return errorResponse(
    c,
    400,
    "invalid_request",
    message,
    error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
  );
}

async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    return Symbol("invalid");
  }
}

/**
 * /admin/api/shops/:shop/resync (POST) and /admin/api/shops/:shop/backfill (POST to start,
 * GET for progress). Resync answers when the orders are read and queued; a backfill answers
 * 202 at once and is followed with GET.
 */
export function syncRoutes(deps: AdminDeps): Hono {
  const { ctx } = deps;
  const { backfills } = ctx;
  const queue = new BackfillQueue(ctx.redis, ctx.prefix, backfills);
  deps.onClose?.(() => queue.close());
  const api = new Hono();

  /** The shop named in the path, or the error response that says why there is none. */
  const shopOf = async (c: Context): Promise<ShopRecord | Response> => {
    const domain = ShopDomain.safeParse(c.req.param("shop"));
    if (!domain.success) {
      return errorResponse(c, 400, "invalid_request", "shop is invalid", [
        { path: "shop", message: "must be a *.myshopify.com domain" },
      ]);
    }
    return (
      (await ctx.shops.getShop(domain.data)) ??
      errorResponse(c, 404, "not_found", `shop ${domain.data} is not registered`)
    );
  };

  api.post("/shops/:shop/resync", async (c) => {
    const shop = await shopOf(c);
    if (shop instanceof Response) return shop;
    const parsed = ResyncBody.safeParse(await readJson(c));
    if (!parsed.success) return invalid(c, parsed.error);
    const body = parsed.data;
    const target: ResyncTarget =
      "order" in body
        ? { kind: "order", order: body.order }
        : "since" in body
          ? { kind: "range", since: body.since, ...(body.until ? { until: body.until } : {}) }
          : { kind: "all" };
    try {
      const result = await resync(ctx, shop, target);
      if (result.notFound) {
        return errorResponse(c, 404, "not_found", `Shopify has no order ${result.notFound}`, [
          { path: "order", message: "no order with this ID or name" },
        ]);
      }
      return c.json(result);
    } catch (error) {
      if (error instanceof ShopNotConnectedError)
        return errorResponse(c, 409, "shop_not_connected", error.message);
      if (error instanceof ResyncInputError)
        return errorResponse(c, 400, "invalid_request", error.message, [
          { path: error.field, message: error.message },
        ]);
      throw error;
    }
  });

  api.post("/shops/:shop/backfill", async (c) => {
    const shop = await shopOf(c);
    if (shop instanceof Response) return shop;
    if (!shop.accessTokenSealed) {
      return errorResponse(
        c,
        409,
        "shop_not_connected",
        `shop ${shop.shop} has no Shopify access token; install the app on it first`,
      );
    }
    const parsed = BackfillBody.safeParse(await readJson(c));
    if (!parsed.success) {
      return invalid(c, parsed.error, "give nothing, or since: the date to start from");
    }
    const { backfill, started } = await queue.start(shop.shop, {
      since: parsed.data.since ?? null,
    });
    return c.json({ started, ...progressOf(backfill, { scopes: shop.scopes }) }, 202);
  });

  api.get("/shops/:shop/backfill", async (c) => {
    const shop = await shopOf(c);
    if (shop instanceof Response) return shop;
    const latest = await backfills.latest(shop.shop);
    if (!latest) return errorResponse(c, 404, "not_found", "this shop has no backfill yet");
    return c.json(progressOf(latest, { scopes: shop.scopes }));
  });

  return api;
}
