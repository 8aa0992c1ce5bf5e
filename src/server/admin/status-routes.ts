import { Hono } from "hono";
import { z } from "zod";
import { errorResponse, fieldsOf } from "../../lib/http-errors.ts";
import { collectStatus } from "../../ops/index.ts";
import { ShopDomainInput } from "../../sync/source-order.ts";
import type { AdminDeps } from "./admin-deps.ts";
import { singleQuery } from "./query.ts";
import { unknownShopFilter } from "./shop-filter.ts";

// An unknown parameter (`?shopp=…`) is refused, not answered with every shop's report.
const StatusQuery = z.object({ shop: ShopDomainInput.optional() }).strict();

/** GET /admin/api/status[?shop=]: the same report as `connector status --json`. */
export function statusRoutes(deps: AdminDeps): Hono {
  const api = new Hono();
  api.get("/status", async (c) => {
    const refuse = (fields: { path: string; message: string }[]) =>
      errorResponse(c, 400, "invalid_request", "the request has invalid fields", fields);
    const once = singleQuery(c);
    if (!once.ok) return refuse(once.fields);
    const query = StatusQuery.safeParse(once.query);
    if (!query.success) return refuse(fieldsOf(query.error));
    // As `connector status --shop`: a shop it has no record of is named, not a report of none.
    const unknown = await unknownShopFilter(c, deps.ctx, query.data.shop);
    if (unknown) return unknown;
    return c.json(await collectStatus(deps.ctx, { shop: query.data.shop }));
  });
  return api;
}
