import { type Context, Hono } from "hono";
import { z } from "zod";
import {
  BackfillQueue,
  progressOf,
  ResyncInputError,
  type ResyncTarget,
  resync,
} from "../../backfill/index.ts";
import { errorResponse, fieldsOf } from "../../lib/http-errors.ts";
import { INSTANT_FORMS, parseInstantText } from "../../lib/instant.ts";
import { ShopNotConnectedError } from "../../shopify/index.ts";
import type { ShopRecord } from "../../store/index.ts";
import { parseOrderRef } from "../../sync/order-ref.ts";
import { ShopDomainInput } from "../../sync/source-order.ts";
import type { AdminDeps } from "./admin-deps.ts";
import { shopNotRegistered } from "./shop-filter.ts";

const instant = z
  .string()
  .refine((v) => parseInstantText(v) !== null, `must be ${INSTANT_FORMS}`)
  .transform((v) => new Date(parseInstantText(v) ?? 0).toISOString());

/**
 * A start date for reading orders (resync's and backfill's `since`): not after now, as the CLI's
 * `--since`. No order has been updated since a future date, so a resync of one read nothing and
 * answered `{"found": 0}`, as if the shop had no orders to repair.
 */
const pastInstant = instant.refine(
  (since) => Date.parse(since) <= Date.now(),
  "must not be in the future",
);

const RESYNC_FORMS = "give exactly one of order, since (with an optional until) or all: true";

/**
 * The forms of a resync body, by the key that names each: an order (its Shopify ID, as a string
 * or a JSON number, or its name), a range of dates, or every order. The body's keys pick the
 * form, so a mistake is named by its field ("since": not a date) rather than as a body that
 * matches none of three.
 */
const ResyncForms = {
  order: z
    .object({
      order: z
        .union(
          [z.string().trim().min(1), z.number().int().positive().max(Number.MAX_SAFE_INTEGER)],
          {
            error:
              'must be the order\'s Shopify ID or name, such as "5906323456123" or "#1001" (an ID beyond 2^53 as a string)',
          },
        )
        // Read as the CLI reads --order: a gid of another kind, or a number below 1, is no
        // order's, and refused as such rather than looked for and answered 404.
        .transform((value, ctx) => {
          const parsed = parseOrderRef(String(value));
          if (parsed.ok) return parsed.ref;
          ctx.addIssue({ code: "custom", message: parsed.message, input: value });
          return z.NEVER;
        }),
    })
    .strict(),
  range: z
    .object({ since: pastInstant, until: instant.optional() })
    .strict()
    .refine((b) => b.until === undefined || b.until > b.since, {
      path: ["until"],
      message: "must be after since",
    }),
  all: z.object({ all: z.literal(true, { error: "must be true" }) }).strict(),
};
const FORM_OF_KEY: Record<string, keyof typeof ResyncForms> = {
  order: "order",
  since: "range",
  until: "range",
  all: "all",
};

type Field = { path: string; message: string };

/** The resync target the body asks for, or the fields that say what is wrong with it. */
function resyncTarget(body: unknown): ResyncTarget | Field[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return [{ path: "", message: "must be a JSON object" }];
  }
  const keys = Object.keys(body);
  const forms = [...new Set(keys.flatMap((k) => FORM_OF_KEY[k] ?? []))];
  const [form] = forms;
  if (forms.length !== 1 || form === undefined) {
    const known = keys.filter((k) => k in FORM_OF_KEY);
    if (known.length > 0) return [{ path: "", message: `${known.join(" and ")} given together` }];
    if (keys.length === 0) return [{ path: "", message: "none of them given" }];
    return keys.map((k) => ({ path: k, message: "unknown field" }));
  }
  const parsed = ResyncForms[form].safeParse(body);
  if (!parsed.success) return fieldsOf(parsed.error);
  const b = parsed.data;
  if ("order" in b) return { kind: "order", order: b.order };
  if ("since" in b)
    return { kind: "range", since: b.since, ...(b.until ? { until: b.until } : {}) };
  return { kind: "all" };
}

const BackfillBody = z
  .object({
    since: pastInstant.optional(),
  })
  .strict();

/** 400 for a body whose fields say what is wrong; `message` says what a body may hold. */
function invalid(c: Context, fields: Field[], message: string) {
  return errorResponse(c, 400, "invalid_request", message, fields);
}

const NOT_JSON = Symbol("not JSON");

const notJson = (c: Context) =>
  errorResponse(c, 400, "invalid_json", "the body is not valid JSON", [
    { path: "", message: "invalid JSON" },
  ]);

/** The body's JSON ({} for none), or NOT_JSON. */
async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/**
 * /admin/api/shops/:shop/resync (POST) and /admin/api/shops/:shop/backfill (POST to start,
 * GET for progress). A resync of one order answers when it is read and queued; a resync of a
 * range or of every order, and a backfill, answer 202 at once and are followed with GET.
 */
export function syncRoutes(deps: AdminDeps): Hono {
  const { ctx } = deps;
  const { backfills } = ctx;
  const queue = new BackfillQueue(ctx.redis, ctx.prefix, backfills);
  deps.onClose?.(() => queue.close());
  const api = new Hono();

  /** The shop named in the path, or the error response that says why there is none. */
  const shopOf = async (c: Context): Promise<ShopRecord | Response> => {
    const domain = ShopDomainInput.safeParse(c.req.param("shop"));
    if (!domain.success) {
      return errorResponse(c, 400, "invalid_request", "shop is invalid", [
        { path: "shop", message: "must be a *.myshopify.com domain" },
      ]);
    }
    return (await ctx.shops.getShop(domain.data)) ?? shopNotRegistered(c, domain.data);
  };

  api.post("/shops/:shop/resync", async (c) => {
    const shop = await shopOf(c);
    if (shop instanceof Response) return shop;
    const body = await readJson(c);
    if (body === NOT_JSON) return notJson(c);
    const target = resyncTarget(body);
    if (Array.isArray(target)) return invalid(c, target, RESYNC_FORMS);
    if (target.kind !== "order") return resyncAsBackfill(c, shop, target);
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

  /**
   * A resync of a range or of every order reads pages at the provider budget's pace: hours for a
   * large shop, far past what a reverse proxy waits for an answer, and lost with the web process
   * that ran it. It runs as a backfill of that window instead: 202 at once, in the workers,
   * resumed after a restart, followed with GET …/backfill. A shop runs one backfill at a time:
   * while one is unfinished, 409 says so (the window it walks is not the one asked for).
   */
  const resyncAsBackfill = async (
    c: Context,
    shop: ShopRecord,
    target: Exclude<ResyncTarget, { kind: "order" }>,
  ) => {
    const refused = notConnected(c, shop);
    if (refused) return refused;
    const window = target.kind === "range" ? target : {};
    const { backfill, started } = await queue.start(shop.shop, window);
    const progress = progressOf(backfill, { scopes: shop.scopes });
    c.header("location", `/admin/api/shops/${shop.shop}/backfill`);
    if (!started) {
      return c.json(
        {
          error: {
            code: "backfill_running",
            message: `shop ${shop.shop} has a backfill running (${progress.percent ?? 0} % done), and a resync of a range or of every order runs as one: ask again once it has ended (GET /admin/api/shops/${shop.shop}/backfill), or resync single orders meanwhile`,
          },
          backfill: progress,
        },
        409,
      );
    }
    return c.json({ started, ...progress }, 202);
  };

  const notConnected = (c: Context, shop: ShopRecord) =>
    shop.accessTokenSealed
      ? null
      : errorResponse(
          c,
          409,
          "shop_not_connected",
          `shop ${shop.shop} has no Shopify access token; install the app on it first`,
        );

  api.post("/shops/:shop/backfill", async (c) => {
    const shop = await shopOf(c);
    if (shop instanceof Response) return shop;
    const refused = notConnected(c, shop);
    if (refused) return refused;
    const body = await readJson(c);
    if (body === NOT_JSON) return notJson(c);
    const parsed = BackfillBody.safeParse(body);
    if (!parsed.success) {
      return invalid(c, fieldsOf(parsed.error), "give nothing, or since: the date to start from");
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
