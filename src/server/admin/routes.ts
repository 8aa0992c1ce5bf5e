import type { Hono } from "hono";
import type { AdminDeps } from "./admin-deps.ts";
import { deadLetterRoutes } from "./dead-letter-routes.ts";
import { queueDashboard } from "./queue-dashboard.ts";
import { statusRoutes } from "./status-routes.ts";
import { syncRoutes } from "./sync-routes.ts";

/**
 * The one place admin routers are mounted. Everything mounted here is behind ADMIN_TOKEN
 * (the guard runs before it in `index.ts`). JSON routers go under `/api`, each in its own file
 * that exports a function `(deps: AdminDeps) => Hono`:
 *   api.route("/", deadLetterRoutes(deps));   // dead-letter-routes.ts
 *   api.route("/", syncRoutes(deps));         // sync-routes.ts (resync, backfill)
 */
export function mountAdminRoutes(admin: Hono, api: Hono, deps: AdminDeps): void {
  api.get("/", (c) =>
    c.json({
      endpoints: [
        "GET /admin/api/status",
        "GET /admin/api/dead-letters",
        "GET /admin/api/dead-letters/counts",
        "GET /admin/api/dead-letters/:id",
        "POST /admin/api/dead-letters/:id/retry",
        "POST /admin/api/dead-letters/retry",
        "GET /admin/api/dead-letters/retry/:jobId",
        "DELETE /admin/api/dead-letters/:id",
        "POST /admin/api/shops/:shop/resync",
        "POST /admin/api/shops/:shop/backfill",
        "GET /admin/api/shops/:shop/backfill",
        "GET /admin/queues (dashboard)",
        "POST /admin/api/shops/:shop/resync",
        "POST /admin/api/shops/:shop/backfill",
        "GET /admin/api/shops/:shop/backfill",
      ],
    }),
  );
  api.route("/", statusRoutes(deps));
  api.route("/", deadLetterRoutes(deps));
  api.route("/", syncRoutes(deps));
  admin.route("/api", api);
  admin.get("/queues/", (c) => c.redirect("/admin/queues", 301));
  admin.route("/queues", queueDashboard(deps));
}
