/**
 * The baseline of `bench:throttle --scenario flash-sale`, as a worker process: the connector's
 * own sync processor with no per-store limiter (every request allowed, Retry-After obeyed), run
 * by a BullMQ worker whose queue limiter is set to the provider's limit. What a user would build
 * with BullMQ alone. Configured like `dist/main.mjs --role worker` (REDIS_URL, REDIS_PREFIX,
 * DATABASE_PATH, PROVIDER_*, WORKER_CONCURRENCY, METRICS_PORT).
 */
import { Worker } from "bullmq";
import { createConnector } from "../src/app/connector.ts";
import { parseEnv } from "../src/config/env.ts";
import { resolveRuntimeConfig } from "../src/config/runtime-config.ts";
import { createSyncProcessor } from "../src/engine/sync-processor.ts";
import { createLogger } from "../src/lib/logger.ts";
import { duplicateConnection } from "../src/lib/redis-keys.ts";
import { ConnectorMetrics, startMetricsServer } from "../src/metrics/index.ts";
import { QUEUE, queueOptions } from "../src/queue/names.ts";
import { noStoreLimiter } from "./no-store-limiter.ts";

const env = parseEnv(process.env);
const metrics = new ConnectorMetrics({ defaultMetrics: false });
if (env.METRICS_PORT)
  await startMetricsServer(metrics, { port: env.METRICS_PORT, host: "127.0.0.1" });
const ctx = createConnector({
  config: resolveRuntimeConfig(env),
  logger: createLogger("silent"),
  redis: env.REDIS_URL ?? "",
  prefix: env.REDIS_PREFIX,
  metrics,
  providerDefaults: {
    baseUrl: env.PROVIDER_BASE_URL ?? "",
    authUrl: env.PROVIDER_AUTH_URL ?? "",
    audience: env.PROVIDER_AUDIENCE ?? "",
  },
});
await ctx.ready();
new Worker(
  QUEUE.sync,
  createSyncProcessor({
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    shops: ctx.shops,
    links: ctx.links,
    limiter: noStoreLimiter(),
    providerFor: (shop) => ctx.providers.for(shop),
    logger: ctx.logger,
    metrics: metrics.sync,
  }),
  {
    ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
    concurrency: env.WORKER_CONCURRENCY,
    limiter: { max: env.PROVIDER_RATE_LIMIT, duration: env.PROVIDER_RATE_WINDOW_MS },
  },
);
