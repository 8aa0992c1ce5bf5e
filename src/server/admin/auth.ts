import type { Context, MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { errorResponse } from "../../lib/http-errors.ts";
import { tokenMatches } from "../../lib/token-match.ts";
import type { AdminSessions } from "./admin-sessions.ts";
import type { LoginGuard } from "./login-guard.ts";
import { loginPage } from "./login-page.ts";

export { tokenMatches };

/** The browser session cookie: its value is a random session ID, kept in Redis (AdminSessions). */
export const ADMIN_COOKIE = "connector_admin";

export interface AdminAuthOptions {
  /** ADMIN_TOKEN; undefined disables the whole admin surface. */
  token: string | undefined;
  /** The browser sessions (Redis): logout and a changed ADMIN_TOKEN end them at once. */
  sessions: AdminSessions;
  /** Marks the cookie Secure (the app is served over https). */
  secureCookie?: boolean;
  /** Counts wrong tokens per client and refuses a client that guesses (429). */
  guard?: LoginGuard;
}

/** 429 with Retry-After: this client presented too many wrong tokens. */
function throttled(c: Context, seconds: number) {
  c.header("Retry-After", String(seconds));
  return errorResponse(
    c,
    429,
    "too_many_attempts",
    `too many wrong admin tokens from this address; try again in ${seconds} s`,
  );
}

function wantsHtml(c: Context): boolean {
  return (c.req.header("accept") ?? "").includes("text/html");
}

function bearer(c: Context): string | undefined {
  const header = c.req.header("authorization");
  if (!header) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1]?.trim() ?? "";
}

async function hasSession(c: Context, options: AdminAuthOptions & { token: string }) {
  return options.sessions.valid(getCookie(c, ADMIN_COOKIE), options.token);
}

async function startSession(c: Context, options: AdminAuthOptions & { token: string }) {
  const id = await options.sessions.start(options.token);
  setCookie(c, ADMIN_COOKIE, id, {
    path: "/admin",
    httpOnly: true,
    sameSite: "Strict",
    secure: options.secureCookie ?? false,
    maxAge: Math.floor(options.sessions.ttlMs / 1000),
  });
}

function refuse(c: Context, code: "missing_token" | "invalid_token", message: string) {
  c.header(
    "WWW-Authenticate",
    `Bearer realm="connector-admin"${code === "invalid_token" ? ', error="invalid_token"' : ""}`,
  );
  if (wantsHtml(c))
    return c.html(
      loginPage({
        next: c.req.path,
        error: code === "invalid_token" ? "That token is not valid." : undefined,
      }),
      401,
    );
  return errorResponse(c, 401, code, message);
}

/**
 * Guards everything under /admin. Three ways in, all checked against ADMIN_TOKEN:
 * - `Authorization: Bearer <token>` (API clients, scripts, Prometheus-style scrapers);
 * - the http-only session cookie set by `POST /admin/login` (the browser dashboard), naming a
 *   session kept in Redis;
 * - `?token=<token>` on a GET: exchanged once for the cookie, then redirected to the same URL
 *   without the token, so it does not stay in the address bar or the history.
 * No ADMIN_TOKEN configured: every admin route answers 403 `admin_disabled`, never open.
 */
export function adminAuth(options: AdminAuthOptions): MiddlewareHandler {
  return async (c, next) => {
    const token = options.token;
    if (!token) {
      return errorResponse(
        c,
        403,
        "admin_disabled",
        "the admin API and dashboard are disabled: set ADMIN_TOKEN (at least 16 characters) to enable them",
      );
    }
    const presented = bearer(c);
    const queryToken = c.req.method === "GET" ? c.req.query("token") : undefined;
    if (options.guard && (presented !== undefined || queryToken !== undefined)) {
      const wait = await options.guard.retryAfter(c);
      if (wait > 0) return throttled(c, wait);
    }
    if (presented !== undefined) {
      if (tokenMatches(presented, token)) return next();
      const wait = (await options.guard?.failed(c, "bearer token")) ?? 0;
      if (wait > 0) return throttled(c, wait);
      return refuse(c, "invalid_token", "the bearer token is not valid");
    }
    if (queryToken !== undefined) {
      if (!tokenMatches(queryToken, token)) {
        const wait = (await options.guard?.failed(c, "token link")) ?? 0;
        if (wait > 0) return throttled(c, wait);
        return refuse(c, "invalid_token", "the token is not valid");
      }
      await startSession(c, { ...options, token });
      const url = new URL(c.req.url);
      url.searchParams.delete("token");
      return c.redirect(`${url.pathname}${url.search}`, 303);
    }
    if (await hasSession(c, { ...options, token })) return next();
    return refuse(
      c,
      "missing_token",
      "send the admin token as `Authorization: Bearer <ADMIN_TOKEN>`, or log in at /admin/login",
    );
  };
}

/** GET /admin/login (a form), POST /admin/login (token → session cookie), POST /admin/logout. */
export function loginHandlers(options: AdminAuthOptions) {
  return {
    form: (c: Context) => {
      if (!options.token) {
        return errorResponse(
          c,
          403,
          "admin_disabled",
          "the admin dashboard is disabled: set ADMIN_TOKEN to enable it",
        );
      }
      return c.html(loginPage({ next: safeNext(c.req.query("next")) }));
    },
    login: async (c: Context) => {
      const token = options.token;
      if (!token) {
        return errorResponse(
          c,
          403,
          "admin_disabled",
          "the admin dashboard is disabled: set ADMIN_TOKEN to enable it",
        );
      }
      const wait = (await options.guard?.retryAfter(c)) ?? 0;
      if (wait > 0) return throttled(c, wait);
      const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
      const presented = typeof form.token === "string" ? form.token : "";
      const next = safeNext(typeof form.next === "string" ? form.next : undefined);
      if (!presented || !tokenMatches(presented, token)) {
        const blocked = (await options.guard?.failed(c, "login form")) ?? 0;
        if (blocked > 0) return throttled(c, blocked);
        return c.html(loginPage({ next, error: "That token is not valid." }), 401);
      }
      await startSession(c, { ...options, token });
      return c.redirect(next, 303);
    },
    logout: async (c: Context) => {
      await options.sessions.end(getCookie(c, ADMIN_COOKIE));
      deleteCookie(c, ADMIN_COOKIE, { path: "/admin" });
      return c.redirect("/admin/login", 303);
    },
  };
}

/** Only redirect inside the admin area (no open redirect to another site). */
function safeNext(next: string | undefined): string {
  return next && /^\/admin(\/[\w\-./]*)?$/.test(next) && !next.includes("//")
    ? next
    : "/admin/queues";
}
