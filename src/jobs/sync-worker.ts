import { Worker } from "bullmq";
import type { Logger } from "pino";
import type { ProviderClients } from "../engine/provider-clients.ts";
import {
  createSyncProcessor,
  type SyncMetrics,
  type SyncProcessorDeps,
} from "../engine/sync-processor.ts";
import { duplicateConnection, type RedisConnection } from "../lib/redis-keys.ts";
import type { SyncJobData } from "../queue/jobs.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";

/** What the sync worker runs on: the processor's deps, its Redis and its settings. */
export interface SyncWorkerDeps
  extends Omit<SyncProcessorDeps, "logger" | "metrics" | "refetchOrder" | "providerFor"> {
  /** Each shop's provider client, with the limiter's feedback wired in. */
  providers: Pick<ProviderClients, "for">;
  refetchOrder: NonNullable<SyncProcessorDeps["refetchOrder"]>;
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
  metrics: { sync: SyncMetrics };
  config: { env: { WORKER_CONCURRENCY: number; WORKER_LOCK_MS: number } };
}

export interface SyncWorkerOptions {
  concurrency?: number;
  metrics?: SyncMetrics;
}

/**
 * The sync worker: one BullMQ worker on the sync queue, running the reconcile processor. Its
 * own Redis connection (BullMQ blocks on it); shares the context's store, limiter and clients.
 */
export function startSyncWorker(
  ctx: SyncWorkerDeps,
  options: SyncWorkerOptions = {},
): Worker<SyncJobData> {
  const processor = createSyncProcessor({
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    shops: ctx.shops,
    links: ctx.links,
    limiter: ctx.limiter,
    providerFor: (shop) => ctx.providers.for(shop),
    // A snapshot made stale by orders/edited or refunds/create is replaced by the order as the
    // Admin API has it now (late-bound: the dead-letter retry uses the same one).
    refetchOrder: (shop, orderId) => ctx.refetchOrder(shop, orderId),
    logger: ctx.logger.child({ component: "sync-worker" }),
    metrics: options.metrics ?? ctx.metrics.sync,
  });
  const worker = new Worker<SyncJobData>(QUEUE.sync, processor, {
    ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
    concurrency: options.concurrency ?? ctx.config.env.WORKER_CONCURRENCY,
    // A crashed worker's active jobs return to the queue after this; they resume from the links.
    lockDuration: ctx.config.env.WORKER_LOCK_MS,
    stalledInterval: ctx.config.env.WORKER_LOCK_MS,
    maxStalledCount: 10,
  });
  worker.on("error", (error) =>
    ctx.logger.error({ err: { message: error.message } }, "sync worker error"),
  );
  return worker;
}
