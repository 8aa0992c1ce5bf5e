import { type Job, Worker } from "bullmq";
import {
  BackfillQueue,
  type BackfillRepository,
  createSweepProcessor,
  PRUNE_SCHEDULER_ID,
  RedisLossMarks,
  SWEEP_JOB,
  type SweepDeps,
  type SweepJobData,
  SweepScheduler,
} from "../backfill/index.ts";
import { retagOrders } from "../engine/provider-event-processor.ts";
import type { ClaimRepository } from "../features/claims/repository.ts";
import { errorText } from "../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import {
  BULK_RETRY_JOB,
  type BulkRetryJobData,
  BulkRetryQueue,
  createBulkRetryProcessor,
  isBulkRetryJob,
  RECONNECT_JOB,
} from "../ops/bulk-retry.ts";
import { restoreDeadLetters } from "../ops/dead-letter-restore.ts";
import { createDeadLetters, type DeadLetterOpsDeps } from "../ops/index.ts";
import { queueWaitingReconnect } from "../ops/reconnect-net.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import type { ShopInstaller } from "../shopify/install/index.ts";
import type { ShopTokens } from "../shopify/install/shop-tokens.ts";
import type { ProviderEventRepository } from "../store/index.ts";
import { knownKindsOnly } from "./job-kinds.ts";
import { orderLock } from "./provider-event-worker.ts";
import { tracedJob } from "./traced-job.ts";

/** What the sweep runs on: the processor's deps, the installer and its Redis. */
export interface SweepWorkerDeps
  extends Omit<
    SweepDeps,
    | "checkSubscriptions"
    | "migrateToken"
    | "resumeWaiting"
    | "keepBackfillQueued"
    | "restoreDeadLetters"
    | "lossMarks"
  > {
  installer: Pick<ShopInstaller, "checkSubscriptions">;
  /** Migrates a shop still on a non-expiring Shopify token (each sweep until it is). */
  shopTokens: Pick<ShopTokens, "migrate">;
  redis: RedisConnection;
  prefix: string;
  reconcileIntervalMs: number;
  /** The provider's stored events and how many days their bodies are kept. */
  providerEvents: Pick<ProviderEventRepository, "pruneBodies">;
  providerEventRetentionDays: number;
  /** The process's metrics: each sweep's counts per provider store. */
  metrics?: { swept(storeId: number | null, result: { checked: number; queued: number }): void };
  /** A reconnect's job resumes the shop's paused backfill and applies its claims' tags again. */
  backfills: BackfillRepository;
  claims: ClaimRepository;
}

export interface SweepWorkerHandle {
  worker: Worker<SweepJobData | BulkRetryJobData>;
  scheduler: SweepScheduler;
  close(): Promise<void>;
}

/** How often the worker looks for shops installed or uninstalled since the last look. */
const RESCHEDULE_EVERY_MS = 60_000;

/**
 * The maintenance queue's worker: the reconciliation sweep. At start, and every minute after, it
 * makes sure every active shop with a Shopify token has its job scheduler (every
 * RECONCILE_INTERVAL_MS) and none of the others do. It also runs the hourly retention of the
 * provider's event bodies (PROVIDER_EVENT_RETENTION_DAYS), the admin API's bulk retries of
 * the dead-letter queue, and what waited for a shop's token once it has a new one (RECONNECT_JOB,
 * queued by the web process and `shops add`, and again by the shop's sweep when that job never
 * ran: ops/reconnect-net.ts); closing puts a running bulk retry back in the queue between two
 * chunks.
 */
export async function startSweepWorker(
  // The dead-letter queue's deps too: the admin API's bulk retries run here.
  ctx: SweepWorkerDeps & DeadLetterOpsDeps,
  options: { rescheduleEveryMs?: number } = {},
): Promise<SweepWorkerHandle> {
  const scheduler = new SweepScheduler(ctx.redis, ctx.prefix, ctx.reconcileIntervalMs);
  await scheduler.scheduleAll(ctx.shops);
  await scheduler.schedulePrune();
  const deadLetters = createDeadLetters(ctx);
  const reconnects = new BulkRetryQueue(ctx.redis, ctx.prefix);
  const sweepLogger = ctx.logger.child({ component: "sweep-worker" });
  const backfillQueue = new BackfillQueue(ctx.redis, ctx.prefix, ctx.backfills);
  const processor = createSweepProcessor({
    shops: ctx.shops,
    links: ctx.links,
    checkpoints: ctx.checkpoints,
    shopifyAdmin: ctx.shopifyAdmin,
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    limiter: ctx.limiter,
    logger: sweepLogger,
    checkSubscriptions: (shop) => ctx.installer.checkSubscriptions(shop),
    migrateToken: (shop) => ctx.shopTokens.migrate(shop),
    // The one job of a reconnect, queued again when it never ran (see reconnect-net.ts).
    resumeWaiting: (shop) =>
      queueWaitingReconnect(
        {
          backfills: ctx.backfills,
          deadLetters,
          jobs: reconnects,
          redis: ctx.redis,
          prefix: ctx.prefix,
          logger: sweepLogger,
        },
        shop,
      ),
    keepBackfillQueued: async ({ shop }) => {
      const requeued = await backfillQueue.keepQueued(shop);
      if (requeued) {
        sweepLogger.info(
          { shop, backfillId: requeued.id, done: requeued.done },
          "the shop's running backfill had no job running it: queued again, from its cursor",
        );
      }
    },
    lossMarks: new RedisLossMarks(ctx.redis, ctx.prefix),
    restoreDeadLetters: ({ shop }) =>
      restoreDeadLetters(
        {
          links: ctx.links,
          queues: ctx.queues,
          redis: ctx.redis,
          prefix: ctx.prefix,
          logger: sweepLogger,
        },
        shop,
      ),
    onSwept: (shop, result) => ctx.metrics?.swept(shop.storeId, result),
    pruneProviderEvents: () =>
      ctx.providerEvents.pruneBodies(
        new Date(Date.now() - ctx.providerEventRetentionDays * 86_400_000),
      ),
  });
  const bulkRetry = createBulkRetryProcessor({
    deadLetters,
    logger: ctx.logger.child({ component: "dead-letters" }),
    reconnect: {
      resumeBackfill: async (shop) => {
        // Uninstalled since (or not configured): the backfill stays paused for the next install.
        if ((await ctx.shops.getShop(shop))?.status !== "active") return false;
        return (await backfillQueue.resumePaused(shop)) !== null;
      },
      retagClaims: (shop) =>
        retagOrders(
          {
            claims: ctx.claims,
            shops: ctx.shops,
            shopifyAdmin: ctx.shopifyAdmin,
            logger: ctx.logger.child({ component: "claims", shop }),
            withOrderLock: orderLock(ctx.redis, ctx.prefix),
          },
          shop,
        ),
    },
  });
  const stopping = new AbortController();
  const run = tracedJob(
    (
      job: Job<SweepJobData | BulkRetryJobData>,
      token?: string,
      signal?: AbortSignal,
    ): Promise<unknown> =>
      isBulkRetryJob(job.name)
        ? bulkRetry(job as Job<BulkRetryJobData>, token, signal)
        : processor(job as Job<SweepJobData>),
  );
  const worker = new Worker<SweepJobData | BulkRetryJobData>(
    QUEUE.maintenance,
    knownKindsOnly(
      QUEUE.maintenance,
      [SWEEP_JOB, PRUNE_SCHEDULER_ID, BULK_RETRY_JOB, RECONNECT_JOB],
      (job, token, signal?: AbortSignal) =>
        run(job, token, signal ? AbortSignal.any([signal, stopping.signal]) : stopping.signal),
      { logger: sweepLogger },
    ),
    {
      ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
      concurrency: 2,
      lockDuration: 120_000,
    },
  );
  onQueueErrors(worker, (error) =>
    ctx.logger.error({ err: { message: errorText(error) } }, "sweep worker error"),
  );
  // A refresh that fails (the database or Redis away) is said once, with its cause, and once
  // more when one succeeds again; the attempts between are at debug. The outage's own lines name
  // the setting and the fix.
  let failingSince: number | undefined;
  const refresh = setInterval(() => {
    scheduler.scheduleAll(ctx.shops).then(
      () => {
        if (failingSince === undefined) return;
        ctx.logger.info(
          `sweep schedulers refreshed again after ${Math.round((Date.now() - failingSince) / 1000)} s`,
        );
        failingSince = undefined;
      },
      (error: unknown) => {
        const first = failingSince === undefined;
        failingSince ??= Date.now();
        ctx.logger[first ? "warn" : "debug"](
          { err: { message: errorText(error) } },
          first
            ? "sweep schedulers not refreshed: shops installed or uninstalled meanwhile get or lose their sweep once a refresh succeeds (tried every minute)"
            : "sweep schedulers not refreshed",
        );
      },
    );
  }, options.rescheduleEveryMs ?? RESCHEDULE_EVERY_MS);
  refresh.unref();
  return {
    worker,
    scheduler,
    async close() {
      clearInterval(refresh);
      stopping.abort();
      await worker.close();
      await scheduler.close();
      await backfillQueue.close();
      await reconnects.close();
    },
  };
}
