import { type Context, Hono } from "hono";
import { z } from "zod";
import { REASON_TEXT_MAX, type RetryOutcome } from "../../engine/dead-letters.ts";
import { errorResponse, fieldsOf } from "../../lib/http-errors.ts";
import { BulkRetryQueue } from "../../ops/bulk-retry.ts";
import { createDeadLetters } from "../../ops/index.ts";
import { FAILURE_CATEGORIES } from "../../sync/failure.ts";
import { ShopDomainInput } from "../../sync/source-order.ts";
import type { AdminDeps } from "./admin-deps.ts";
import { queryWholeNumber, singleQuery } from "./query.ts";
import { unknownShopFilter } from "./shop-filter.ts";

const Filter = z.object({
  shop: ShopDomainInput.optional(),
  // A category the connector files entries under: a misspelt one is refused, not an empty list.
  reason: z
    .enum(FAILURE_CATEGORIES, { message: `must be one of ${FAILURE_CATEGORIES.join(", ")}` })
    .optional(),
  // Text the entry's reason contains (case-sensitive), as `dlq list --reason-includes`.
  reasonIncludes: z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(REASON_TEXT_MAX, `must be at most ${REASON_TEXT_MAX} characters`)
    .regex(/^[^\r\n]*$/, "must be one line")
    .optional(),
});
const Page = z.object({
  offset: queryWholeNumber(0).default(0),
  limit: queryWholeNumber(1, 500).default(50),
});
// A field these do not know is refused, not ignored: a misspelt filter (`reason_includes`)
// would otherwise list, or retry, every entry the rest of the filter matches.
const ListQuery = Filter.extend(Page.shape).strict();
const CountsQuery = Filter.pick({ shop: true }).strict();
const BulkBody = Filter.extend({ all: z.boolean().optional() }).strict();

function invalid(c: Context, error: z.ZodError | { path: string; message: string }[]) {
  return errorResponse(
    c,
    400,
    "invalid_request",
    "the request has invalid fields",
    Array.isArray(error) ? error : fieldsOf(error),
  );
}

const STATUS: Record<RetryOutcome["result"], 200 | 409 | 503> = {
  queued: 200,
  reingested: 200,
  skipped: 409,
  failed: 503,
};

/** Where a bulk retry is followed. */
const bulkRetryPath = (id: string) => `/admin/api/dead-letters/retry/${encodeURIComponent(id)}`;

/**
 * /admin/api/dead-letters: list (filters shop, reason, reasonIncludes; paging offset, limit),
 * show, retry one, retry every match (a filter or `all: true` is required, so an empty body never
 * retries everything by accident), discard. Retrying every match answers 202 at once: it runs as a job
 * on the maintenance queue (the worker role), followed at GET /dead-letters/retry/:jobId; the
 * same filter asked again while that job is queued or running answers that job.
 */
export function deadLetterRoutes(deps: AdminDeps): Hono {
  const dlq = createDeadLetters(deps.ctx);
  const bulk = new BulkRetryQueue(deps.ctx.redis, deps.ctx.prefix);
  deps.onClose?.(() => bulk.close());
  const api = new Hono();

  api.get("/dead-letters", async (c) => {
    const once = singleQuery(c);
    if (!once.ok) return invalid(c, once.fields);
    const query = ListQuery.safeParse(once.query);
    if (!query.success) return invalid(c, query.error);
    const { offset, limit, ...filter } = query.data;
    const unknown = await unknownShopFilter(c, deps.ctx, filter.shop);
    if (unknown) return unknown;
    return c.json(await dlq.list(filter, { offset, limit }));
  });

  api.get("/dead-letters/counts", async (c) => {
    const once = singleQuery(c);
    if (!once.ok) return invalid(c, once.fields);
    const filter = CountsQuery.safeParse(once.query);
    if (!filter.success) return invalid(c, filter.error);
    const unknown = await unknownShopFilter(c, deps.ctx, filter.data.shop);
    if (unknown) return unknown;
    return c.json(await dlq.countByReason(filter.data.shop));
  });

  api.post("/dead-letters/retry", async (c) => {
    const text = await c.req.text();
    let raw: unknown = {};
    if (text.trim() !== "") {
      try {
        raw = JSON.parse(text);
      } catch {
        return errorResponse(c, 400, "invalid_json", "the body is not valid JSON", [
          { path: "", message: "invalid JSON" },
        ]);
      }
    }
    const body = BulkBody.safeParse(raw);
    if (!body.success) return invalid(c, body.error);
    const { all, ...filter } = body.data;
    if (!all && !filter.shop && !filter.reason && !filter.reasonIncludes) {
      return errorResponse(
        c,
        400,
        "filter_required",
        "give shop, reason and/or reasonIncludes, or all: true",
        [{ path: "shop", message: "required unless reason, reasonIncludes or all is given" }],
      );
    }
    const unknown = await unknownShopFilter(c, deps.ctx, filter.shop);
    if (unknown) return unknown;
    const { id, created } = await bulk.start(filter);
    const view = await bulk.view(id);
    const href = bulkRetryPath(id);
    c.header("Location", href);
    // A job that finished in between (and was removed) is still the answer: its id and address.
    return c.json({ ...(view ?? { id }), created, href }, 202);
  });

  api.get("/dead-letters/retry/:jobId", async (c) => {
    const view = await bulk.view(c.req.param("jobId"));
    if (!view) {
      return errorResponse(
        c,
        404,
        "not_found",
        "no such bulk retry (finished ones are kept 7 days)",
        [{ path: "jobId", message: "not a bulk retry's id" }],
      );
    }
    return c.json({ ...view, href: bulkRetryPath(view.id) });
  });

  api.get("/dead-letters/:id", async (c) => {
    const entry = await dlq.get(c.req.param("id"));
    if (!entry) return errorResponse(c, 404, "not_found", "no such dead-letter entry");
    return c.json(entry);
  });

  api.post("/dead-letters/:id/retry", async (c) => {
    const outcome = await dlq.retry(c.req.param("id"));
    if (outcome.result === "skipped" && outcome.message.startsWith("not in the dead-letter")) {
      return errorResponse(c, 404, "not_found", outcome.message);
    }
    return c.json(outcome, STATUS[outcome.result]);
  });

  api.delete("/dead-letters/:id", async (c) => {
    const id = c.req.param("id");
    const result = await dlq.discard(id);
    if (result === "not-found")
      return errorResponse(c, 404, "not_found", "no such dead-letter entry");
    if (result === "busy") {
      return errorResponse(c, 409, "busy", "a retry of this entry is in progress; try again");
    }
    return c.json({ id, result });
  });

  return api;
}
