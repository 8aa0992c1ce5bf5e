import { Hono } from "hono";
import { errorResponse } from "../../lib/http-errors.ts";
import { errorText } from "../../lib/redact.ts";
import type { AdminDeps } from "./admin-deps.ts";
import { AdminSessions } from "./admin-sessions.ts";
import { adminAuth, loginHandlers } from "./auth.ts";
import { LoginGuard } from "./login-guard.ts";
import { jsonWrites, sameOriginWrites } from "./request-origin.ts";
import { mountAdminRoutes } from "./routes.ts";

export type { AdminDeps } from "./admin-deps.ts";
export { ADMIN_COOKIE, tokenMatches } from "./auth.ts";

/**
 * The operator's surface, mounted at `/admin` by `createWebApp`: a JSON API under `/admin/api`,
 * the queue dashboard at `/admin/queues`, and `/admin/login` to open a browser session. All of
 * it requires ADMIN_TOKEN; with none configured it answers 403 `admin_disabled`.
 */
export function createAdminApp(deps: AdminDeps): Hono {
  const options = {
    token: deps.ctx.config.env.ADMIN_TOKEN,
    sessions: new AdminSessions({ redis: deps.ctx.redis, prefix: deps.ctx.prefix }),
    secureCookie: deps.ctx.config.appUrl.startsWith("https://"),
    guard: new LoginGuard({
      redis: deps.ctx.redis,
      prefix: deps.ctx.prefix,
      logger: deps.ctx.logger.child({ component: "admin" }),
      proxyHops: deps.ctx.config.env.TRUST_PROXY,
    }),
  };
  const admin = new Hono();
  admin.onError((error, c) => {
    deps.ctx.logger.error(
      { component: "admin", err: { message: errorText(error), name: error.name } },
      "admin request failed",
    );
    return errorResponse(c, 500, "internal_error", "something went wrong; the error was logged");
  });
  // `/admin` (or `/admin/`) is the address an operator types: send them to the dashboard, whose
  // guard then asks for the token. The query goes along: `/admin?token=…` logs in as there.
  admin.use("*", async (c, next) => {
    if (c.req.method !== "GET" || (c.req.path !== "/admin" && c.req.path !== "/admin/")) {
      return next();
    }
    const { search } = new URL(c.req.url);
    return c.redirect(`/admin/queues${search}`, 302);
  });
  const login = loginHandlers(options);
  admin.use("*", sameOriginWrites(new URL(deps.ctx.config.appUrl).origin));
  admin.get("/login", login.form);
  admin.post("/login", login.login);
  admin.post("/logout", login.logout);
  admin.use("*", adminAuth(options));
  admin.use("/api/*", jsonWrites());
  mountAdminRoutes(admin, new Hono(), deps);
  return admin;
}
