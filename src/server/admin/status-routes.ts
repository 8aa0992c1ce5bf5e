import { Hono } from "hono";
import { errorResponse } from "../../lib/http-errors.ts";
import { collectStatus } from "../../ops/index.ts";
import type { AdminDeps } from "./admin-deps.ts";

const SHOP = /^[a-z0-9][a-z0-9-]*\.myshopify\.com$/;

/** GET /admin/api/status[?shop=]: the same report as `connector status --json`. */
export function statusRoutes(deps: AdminDeps): Hono {
  const api = new Hono();
  api.get("/status", async (c) => {
    const shop = c.req.query("shop");
    if (shop !== undefined && !SHOP.test(shop)) {
      return errorResponse(c, 400, "invalid_request", "the request has invalid fields", [
        { path: "shop", message: "must be a *.myshopify.com domain" },
      ]);
    }
    return c.json(await collectStatus(deps.ctx, { shop }));
  });
  return api;
}
