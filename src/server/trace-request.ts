import type { MiddlewareHandler } from "hono";
import { inSpan, markFailed, SpanKind, tracingOn } from "../lib/tracing.ts";

/**
 * The HTTP server span of a route (OpenTelemetry's HTTP server conventions): named
 * `<method> <route>`, with the method, route, scheme and response status; a 5xx marks it failed.
 * No header, query or body goes into it. Off (no OTLP endpoint), the request passes straight on.
 */
export function traceRequest(route: string): MiddlewareHandler {
  return async (c, next) => {
    if (!tracingOn()) return next();
    const method = c.req.method;
    const url = new URL(c.req.url);
    await inSpan(
      `${method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": method,
          "http.route": route,
          "url.path": url.pathname,
          "url.scheme": url.protocol.replace(":", ""),
          "server.address": url.hostname,
          "network.protocol.name": "http",
        },
      },
      async (span) => {
        await next();
        const status = c.res.status;
        span.setAttribute("http.response.status_code", status);
        if (status >= 500) markFailed(span, String(status));
      },
    );
  };
}
