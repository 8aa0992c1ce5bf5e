import type { MiddlewareHandler } from "hono";
import { errorResponse } from "../../lib/http-errors.ts";

const SAFE = /^(GET|HEAD|OPTIONS)$/;

/**
 * Cross-site request forgery, for the admin area's writes (every method but GET, HEAD,
 * OPTIONS): a request a browser sends from another site says so, in `Sec-Fetch-Site`
 * (`cross-site`, `same-site`) or in an `Origin` other than APP_URL's, and is refused with 403
 * `cross_origin` before it is authenticated, so the session cookie opens nothing. A request with
 * neither header is not a browser's (curl, scripts): it authenticates with the bearer token.
 * SameSite=Strict on the cookie is the second line, not the only one.
 */
export function sameOriginWrites(appOrigin: string): MiddlewareHandler {
  return async (c, next) => {
    if (SAFE.test(c.req.method)) return next();
    const site = c.req.header("sec-fetch-site");
    const origin = c.req.header("origin");
    const fields: { path: string; message: string }[] = [];
    if (site !== undefined && site !== "same-origin" && site !== "none") {
      fields.push({ path: "headers.sec-fetch-site", message: `${site} is not same-origin` });
    }
    if (origin !== undefined && origin !== appOrigin) {
      fields.push({ path: "headers.origin", message: `must be ${appOrigin}` });
    }
    if (fields.length === 0) return next();
    return errorResponse(
      c,
      403,
      "cross_origin",
      "admin writes are accepted only from the admin pages of this connector",
      fields,
    );
  };
}

/**
 * The JSON API takes JSON only: a POST, PUT or PATCH says `Content-Type: application/json`, also
 * when its body is empty. A browser sends that type to another site only after a CORS
 * preflight, which this API never grants; text/plain, the type a page on another site may send
 * without asking, is answered 415 naming the header.
 */
export function jsonWrites(): MiddlewareHandler {
  return async (c, next) => {
    if (!/^(POST|PUT|PATCH)$/.test(c.req.method)) return next();
    const type = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
    if (type === "application/json") return next();
    return errorResponse(
      c,
      415,
      "unsupported_media_type",
      "the admin API takes JSON: send Content-Type: application/json",
      [{ path: "headers.content-type", message: type ? `${type} is not JSON` : "missing" }],
    );
  };
}
