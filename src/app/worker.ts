import { createProducts } from "../features/products/compose.ts";
import { startProductImportWorker } from "../features/products/worker.ts";
import { startBackfillWorker } from "../jobs/backfill-worker.ts";
import { startProviderEventWorker } from "../jobs/provider-event-worker.ts";
import { startSweepWorker } from "../jobs/sweep-worker.ts";
import { startSyncWorker } from "../jobs/sync-worker.ts";
import { errorText } from "../lib/redact.ts";
import { startHeartbeat } from "../metrics/index.ts";
import type { Connector } from "./connector.ts";

/**
 * The worker role: the sync worker, the backfill worker, the reconciliation sweep and the
 * settings page's product imports and the provider event worker (claims, registrations). Closing
 * stops the backfills first: they save their cursor and go back to the queue for the next start.
 */
export async function startWorkerRole(connector: Connector): Promise<{ close(): Promise<void> }> {
  const { config, logger } = connector;
  const sync = startSyncWorker(connector);
  await sync.ready;
  logger.info(
    { concurrency: config.env.WORKER_CONCURRENCY, shards: [...sync.workers.keys()] },
    "sync worker running",
  );
  const backfill = startBackfillWorker(connector);
  const sweep = await startSweepWorker(connector);
  const products = createProducts(connector, connector.providers);
  const productImports = startProductImportWorker({
    ...products,
    getShop: (shop) => connector.shops.getShop(shop),
    redis: connector.redis,
    prefix: connector.prefix,
    logger: logger.child({ component: "product-import-worker" }),
  });
  logger.info(
    { reconcileIntervalMs: config.env.RECONCILE_INTERVAL_MS },
    "backfill and reconciliation sweep workers running",
  );
  const providerEvents = await startProviderEventWorker({
    events: connector.providerEvents,
    claims: connector.claims,
    shops: connector.shops,
    shopifyAdmin: connector.shopifyAdmin,
    logger,
    redis: connector.redis,
    prefix: connector.prefix,
  });
  logger.info("provider event worker running");
  // Read by the web process's /metrics (connector_role_heartbeat_timestamp_seconds).
  const heartbeat = startHeartbeat(connector.redis, connector.prefix, "worker", {
    onError: (error) =>
      logger.warn({ err: { message: errorText(error) } }, "heartbeat not written"),
  });
  return {
    async close() {
      heartbeat.stop();
      await backfill.close();
      await productImports.close();
      await providerEvents.close();
      await sweep.close();
      await sync.close();
    },
  };
}
