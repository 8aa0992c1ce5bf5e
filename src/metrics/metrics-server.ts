import { type ServerType, serve } from "@hono/node-server";
import { Hono } from "hono";
import { ConfigError } from "../config/env.ts";
import { errorResponse } from "../lib/http-errors.ts";
import { LINGERING_CLOSE } from "../lib/lingering-close.ts";
import { tokenMatches } from "../lib/token-match.ts";
import type { ConnectorMetrics } from "./connector-metrics.ts";

/**
 * GET /metrics in Prometheus text format. With METRICS_TOKEN set, a scraper must send it as a
 * bearer token (set it whenever the port is reachable from outside: the web port is, since
 * Shopify posts webhooks to it).
 */
export function metricsRoute(
  metrics: Pick<ConnectorMetrics, "text" | "contentType">,
  token?: string,
): Hono {
  const app = new Hono();
  if (token) {
    app.use("/metrics", async (c, next) => {
      const match = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization")?.trim() ?? "");
      if (match?.[1] && tokenMatches(match[1].trim(), token)) return next();
      c.header("WWW-Authenticate", 'Bearer realm="connector-metrics"');
      return errorResponse(c, 401, "invalid_token", "send METRICS_TOKEN as a bearer token");
    });
  }
  app.get("/metrics", async (c) => {
    const body = await metrics.text();
    return c.body(body, 200, { "content-type": metrics.contentType() });
  });
  return app;
}

/**
 * A separate listener for /metrics and /healthz (METRICS_PORT): how a worker process, which
 * serves no HTTP otherwise, is scraped. Each process exposes its own counters; Prometheus
 * sums them across instances.
 */
export async function startMetricsServer(
  metrics: ConnectorMetrics,
  options: { port: number; host?: string; token?: string | undefined },
): Promise<ServerType> {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.route("/", metricsRoute(metrics, options.token));
  const server = serve({
    fetch: app.fetch,
    port: options.port,
    ...(options.host ? { hostname: options.host } : {}),
    serverOptions: LINGERING_CLOSE,
  });
  // A port in use is a configuration error: say which variable, do not crash on an 'error' event.
  await new Promise<void>((resolve, reject) => {
    server.once("listening", () => resolve());
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(
          `METRICS_PORT ${options.port} cannot be used: ${error.code ?? error.message}`,
        ),
      ),
    );
  });
  return server;
}
