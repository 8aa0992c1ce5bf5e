import { Worker } from "bullmq";
import type { ConnectorContext } from "../src/context.ts";
import type { SyncJobData } from "../src/queue/jobs.ts";
import { QUEUE } from "../src/queue/names.ts";
import { createSyncProcessor, type SyncMetrics } from "../src/queue/sync-processor.ts";
import { OrderSource, ShopNotConnectedError } from "../src/shopify/index.ts";
import type { ShopDomain } from "../src/sync/source-order.ts";

export interface SyncWorkerOptions {
  concurrency?: number;
  metrics?: SyncMetrics;
}

/**
 * The sync worker: one BullMQ worker on the sync queue, running the reconcile processor. Its
 * own Redis connection (BullMQ blocks on it); shares the context's store, limiter and clients.
 */
export function startSyncWorker(
  ctx: ConnectorContext,
  options: SyncWorkerOptions = {},
): Worker<SyncJobData> {
  const processor = createSyncProcessor({
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    shops: ctx.shops,
    links: ctx.links,
    limiter: ctx.limiter,
    providerFor: ctx.providerFor,
    // A snapshot made stale by orders/edited or refunds/create is replaced by the order as the
    // Admin API has it now; a shop without an access token keeps the snapshot it has.
    refetchOrder: async (shop, orderId) => {
      try {
        return await new OrderSource(
          ctx.shopifyAdmin.for(shop),
          shop.shop as ShopDomain,
        ).fetchOrder(orderId);
      } catch (error) {
        if (error instanceof ShopNotConnectedError) return null;
        throw error;
      }
    },
    logger: ctx.logger.child({ component: "sync-worker" }),
    metrics: options.metrics ?? ctx.metrics.sync,
  });
  const worker = new Worker<SyncJobData>(QUEUE.sync, processor, {
    connection: ctx.redis.duplicate(),
    prefix: ctx.prefix,
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
