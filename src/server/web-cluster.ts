import cluster, { type Worker } from "node:cluster";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { Logger } from "pino";
import { AggregatorRegistry, type Registry } from "prom-client";
import { ConfigError } from "../config/env.ts";
import { LINGERING_CLOSE } from "../lib/lingering-close.ts";
import { metricsRoute } from "../metrics/index.ts";

/**
 * The web role on more than one core (WEB_PROCESSES > 1): a small primary process forks that
 * many web processes with `node:cluster`, and they serve one port (the primary accepts each
 * connection and hands it to the next process in turn). Every web process is a whole receiver
 * with its own Redis connections; what makes a webhook durable is unchanged.
 *
 * The primary holds no Redis or SQLite connection. It replaces a web process that dies (a
 * replacement that dies before it listens is retried later each time), stops the whole role if
 * one of the first processes dies before it listened (a start-up error would otherwise loop),
 * and serves /metrics on METRICS_PORT as the sum over its web processes (prom-client's
 * AggregatorRegistry); /metrics on the web port answers for the one process that took the
 * connection.
 */

/** Whether this process is the primary of a web role running `processes` web processes. */
export const isWebPrimary = (processes: number) => processes > 1 && cluster.isPrimary;

/** True in a single-process web role, and in the first web process of a cluster only. */
export const isFirstWebProcess = () => !cluster.isWorker || cluster.worker?.id === 1;

/** In a web process of a cluster: lets the primary read this registry for its sum. */
export function shareMetricsWithPrimary(registry: Registry): void {
  if (!cluster.isWorker) return;
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
}

export interface WebPrimaryOptions {
  processes: number;
  logger: Logger;
  /** Serves the web processes' summed metrics (and /healthz) on this port. */
  metrics?: { port: number; host?: string; token?: string | undefined };
  /** A replacement for a dead web process is forked after this long. */
  restartDelayMs?: number;
}

export interface WebPrimary {
  /** The port the web processes serve (as they reported it: PORT=0 picks a free one). */
  port: number;
  pids(): number[];
  /** Stops every web process (SIGTERM, each finishes its requests) and the metrics listener. */
  stop(): Promise<void>;
}

export async function startWebPrimary(options: WebPrimaryOptions): Promise<WebPrimary> {
  const { processes, logger } = options;
  const restartDelayMs = options.restartDelayMs ?? 1_000;
  let stopping = false;
  const listened = new Set<Worker>();

  const metricsServer = options.metrics ? await serveClusterMetrics(options.metrics) : undefined;

  let started = false;
  // Replacements that die before they listen wait longer each time (up to 30 s).
  let failedStarts = 0;
  const port = await new Promise<number>((resolve, reject) => {
    let ready = 0;
    cluster.on("listening", (worker, address) => {
      if (listened.has(worker)) return;
      listened.add(worker);
      failedStarts = 0;
      ready += 1;
      if (ready === processes) {
        started = true;
        resolve(address.port);
      }
    });
    cluster.on("exit", (worker, code, signal) => {
      if (stopping) return;
      const served = listened.delete(worker);
      if (!started && !served) {
        // A first process never served: the same error would kill every replacement.
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.kill("SIGTERM");
        reject(
          new Error(`a web process exited before it listened (code ${code}, signal ${signal})`),
        );
        return;
      }
      if (!served) failedStarts += 1;
      const delay = Math.min(restartDelayMs * 2 ** failedStarts, 30_000);
      logger.error(
        { pid: worker.process.pid, code, signal, restartInMs: delay },
        "a web process died; starting a replacement",
      );
      setTimeout(() => {
        if (!stopping) cluster.fork();
      }, delay).unref();
    });
    for (let i = 0; i < processes; i++) cluster.fork();
  });
  logger.info({ port, processes }, "web processes listening on one port");

  return {
    port,
    pids: () =>
      Object.values(cluster.workers ?? {}).flatMap((w) => (w?.process.pid ? [w.process.pid] : [])),
    async stop() {
      stopping = true;
      const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
      await Promise.all(
        workers.map(
          (worker) =>
            new Promise<void>((resolve) => {
              if (worker.isDead()) return resolve();
              worker.once("exit", () => resolve());
              worker.process.kill("SIGTERM");
            }),
        ),
      );
      if (metricsServer) await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    },
  };
}

async function serveClusterMetrics({
  port,
  host,
  token,
}: {
  port: number;
  host?: string;
  token?: string | undefined;
}) {
  const aggregate = new AggregatorRegistry();
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.route(
    "/",
    metricsRoute(
      { text: () => aggregate.clusterMetrics(), contentType: () => aggregate.contentType },
      token,
    ),
  );
  const server = serve({
    fetch: app.fetch,
    port,
    ...(host ? { hostname: host } : {}),
    serverOptions: LINGERING_CLOSE,
  });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", () => resolve());
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(`METRICS_PORT ${port} cannot be used: ${error.code ?? error.message}`),
      ),
    );
  });
  return server;
}
