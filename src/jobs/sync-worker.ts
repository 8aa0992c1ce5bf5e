import { DelayedError, type Job, Worker } from "bullmq";
import type { Logger } from "pino";
import type { ProviderClients } from "../engine/provider-clients.ts";
import {
  createSyncProcessor,
  type SyncMetrics,
  type SyncProcessorDeps,
} from "../engine/sync-processor.ts";
import { FailureDigest } from "../lib/failure-digest.ts";
import { errorText } from "../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { CONNECTOR } from "../lib/tracing.ts";
import type { SyncJobData } from "../queue/jobs.ts";
import { QUEUE } from "../queue/names.ts";
import { type OrderQueues, SYNC_JOB_NAME } from "../queue/order-queues.ts";
import {
  layoutsKey,
  parseSyncShardName,
  REGISTER_MS,
  retireLayout,
  shardOf,
  syncShardNames,
  syncShardOptions,
} from "../queue/sync-shards.ts";
import { knownKindsOnly } from "./job-kinds.ts";
import { tracedJob } from "./traced-job.ts";

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

export interface SyncWorkerOptions extends ShardWorkerOptions {
  metrics?: SyncMetrics;
  /** The repeated failures' lines (tests pass one on their own clock); one a minute by default. */
  failures?: FailureDigest;
}

/** What the shard workers need besides the processor they run. */
export interface ShardWorkerDeps {
  queues: OrderQueues;
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
  config: { env: { WORKER_CONCURRENCY: number; WORKER_LOCK_MS: number } };
}

export interface ShardWorkerOptions {
  /** Jobs this process runs at once over all shards (default WORKER_CONCURRENCY). */
  concurrency?: number;
  /** How often the recorded layouts are read again (default REGISTER_MS). */
  refreshMs?: number;
}

export type SyncJobProcessor = (job: Job<SyncJobData>, token?: string) => Promise<unknown>;

/** The sync worker of one process: a BullMQ worker on every shard of every recorded layout. */
export interface SyncWorkers {
  /** Resolves once a worker runs on every shard recorded at start. */
  readonly ready: Promise<void>;
  /** The running BullMQ workers by queue name. */
  readonly workers: ReadonlyMap<string, Worker<SyncJobData>>;
  /** Reads the recorded layouts now: starts and stops shard workers, retires drained layouts. */
  refresh(): Promise<void>;
  /** True while a worker runs on every shard it consumes. */
  isRunning(): boolean;
  close(): Promise<void>;
}

/**
 * How long a job waits before looking again when an older layout's shard still holds a pending
 * job of its order (the older job runs first, as BullMQ's `keepLastIfActive` would order them).
 */
export const LAYOUT_YIELD_MS = 1_000;

/** The job states that mean a layout still has work. */
const PENDING = ["waiting", "prioritized", "delayed", "active", "waiting-children"] as const;

/**
 * The sync worker: one BullMQ worker per sync shard (SYNC_QUEUE_SHARDS, src/queue/sync-shards.ts),
 * each with its own Redis connection (BullMQ blocks on it), all running one reconcile processor
 * that shares the context's store, limiter and clients.
 *
 * Fairness across shards: each shard has its own worker and its own share of the process's
 * concurrency (WORKER_CONCURRENCY / shards, rounded up), so a flood in one shard never takes the
 * slots of another's; within a shard the live / flood / bulk priorities order the jobs as before.
 * A changed shard count: the layouts recorded in Redis are read every `refreshMs`; an older
 * layout is consumed until all its shards are empty, then dropped from the record, its workers
 * kept for two more periods and stopped only when still empty (a producer that routed a job there
 * in between has it read). An order with a pending job in an older layout's shard runs there
 * first: a job of the same order in a newer layout waits (LAYOUT_YIELD_MS) until it is done.
 */
export function startSyncWorker(ctx: SyncWorkerDeps, options: SyncWorkerOptions = {}): SyncWorkers {
  const logger = ctx.logger.child({ component: "sync-worker" });
  const failures = options.failures ?? new FailureDigest(logger);
  failures.start();
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
    logger,
    metrics: options.metrics ?? ctx.metrics.sync,
    failures,
  });
  // Traces on: a span per job, continuing the receiver's trace; its ID kept on the order.
  const traced = tracedJob(processor, {
    attributes: (data: SyncJobData) => ({
      [CONNECTOR.orderId]: data.orderId,
      [CONNECTOR.trigger]: data.trigger,
      ...(data.trigger.includes("/") ? { [CONNECTOR.topic]: data.trigger } : {}),
    }),
    // A backfill's or resync's jobs: each its own trace, linked to theirs.
    linkOnly: (data: SyncJobData) => data.priority === "bulk",
    done: (job, traceId) => ctx.links.recordTraceId(job.data.shop, job.data.orderId, traceId),
  });
  const workers = startShardWorkers({ ...ctx, logger }, traced, options);
  return {
    ready: workers.ready,
    workers: workers.workers,
    refresh: () => workers.refresh(),
    isRunning: () => workers.isRunning(),
    async close() {
      await workers.close();
      failures.stop();
    },
  };
}

/**
 * A BullMQ worker on every sync shard of every recorded layout, running `processor` (the
 * reconcile in production; benches and tests pass their own). See `startSyncWorker`.
 */
export function startShardWorkers(
  ctx: ShardWorkerDeps,
  processor: SyncJobProcessor,
  options: ShardWorkerOptions = {},
): SyncWorkers {
  const { logger } = ctx;
  const queues: OrderQueues = ctx.queues;
  const total = options.concurrency ?? ctx.config.env.WORKER_CONCURRENCY;
  const refreshMs = options.refreshMs ?? REGISTER_MS;
  const workers = new Map<string, Worker<SyncJobData>>();
  const connections = new Map<string, RedisConnection>();
  /** Layouts gone from the record, still consumed until `since + 2 × refreshMs`. */
  const lingering = new Map<number, number>();
  let current = 1;
  let closed = false;

  async function processInOrder(job: Job<SyncJobData>, token?: string) {
    const layout = parseSyncShardName(job.queueName)?.count ?? 1;
    const { recorded } = await queues.layouts();
    const position = recorded.indexOf(layout);
    for (const older of position > 0 ? recorded.slice(0, position) : []) {
      const queue = queues.syncQueue(older, shardOf(job.data.shop, older));
      if (await queues.hasPendingJob(queue, job.data.shop, job.data.orderId)) {
        await job.moveToDelayed(Date.now() + LAYOUT_YIELD_MS, token);
        throw new DelayedError();
      }
    }
    return processor(job, token);
  }

  // A kind of job a newer version queues on a shard waits for a worker of that version.
  const runKnown = knownKindsOnly(QUEUE.sync, [SYNC_JOB_NAME], processInOrder, { logger });

  function startShard(name: string) {
    const shard = parseSyncShardName(name);
    if (!shard || workers.has(name) || closed) return;
    // BullMQ does not close a connection it was given: closeShard does.
    const connection = duplicateConnection(ctx.redis);
    connections.set(name, connection);
    const worker = new Worker<SyncJobData>(name, runKnown, {
      ...syncShardOptions(connection, ctx.prefix, shard.count, shard.index),
      concurrency: Math.max(1, Math.ceil(total / current)),
      // A crashed worker's active jobs return to the queue after this; they resume from the links.
      lockDuration: ctx.config.env.WORKER_LOCK_MS,
      stalledInterval: ctx.config.env.WORKER_LOCK_MS,
      maxStalledCount: 10,
    });
    onQueueErrors(worker, (error) =>
      logger.error({ err: { message: errorText(error) }, queue: name }, "sync worker error"),
    );
    workers.set(name, worker);
  }

  async function layoutEmpty(count: number): Promise<boolean> {
    for (let index = 0; index < count; index++) {
      const counts = await queues.syncQueue(count, index).getJobCounts(...PENDING);
      if (Object.values(counts).some((n) => n > 0)) return false;
    }
    return true;
  }

  async function closeShard(name: string) {
    const worker = workers.get(name);
    const connection = connections.get(name);
    workers.delete(name);
    connections.delete(name);
    await worker?.close();
    connection?.disconnect();
  }

  async function stopLayout(count: number) {
    await Promise.all(syncShardNames(count).map(closeShard));
  }

  async function refresh() {
    const layouts = await queues.layouts({ fresh: true });
    if (closed) return;
    current = layouts.current;
    for (const count of layouts.past) {
      if (!(await layoutEmpty(count))) continue;
      await retireLayout(ctx.redis, ctx.prefix, count);
      if (!lingering.has(count)) lingering.set(count, Date.now());
      logger.info({ shards: count }, "sync queue layout drained: no longer recorded");
    }
    const running = new Set(
      [...workers.keys()].map((name) => parseSyncShardName(name)?.count ?? 1),
    );
    for (const count of running) {
      if (!layouts.recorded.includes(count) && !lingering.has(count)) {
        lingering.set(count, Date.now());
      }
    }
    for (const [count, since] of lingering) {
      if (layouts.recorded.includes(count) && !layouts.past.includes(count)) {
        lingering.delete(count);
      } else if (layouts.past.includes(count) && !(await layoutEmpty(count))) {
        lingering.delete(count);
      } else if (Date.now() - since >= 2 * refreshMs) {
        lingering.delete(count);
        if (await layoutEmpty(count)) await stopLayout(count);
        // Someone queued there after all: recorded again, as the oldest, to be drained first.
        else await ctx.redis.zadd(layoutsKey(ctx.prefix), "NX", 0, count);
      }
    }
    for (const count of [layouts.current, ...layouts.past, ...lingering.keys()]) {
      for (const name of syncShardNames(count)) startShard(name);
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let refreshing: Promise<void> = Promise.resolve();
  const guardedRefresh = () => {
    refreshing = refreshing.then(refresh).catch((error: unknown) => {
      logger.warn(
        { err: { message: errorText(error) } },
        "sync worker could not read the shard layouts; retrying",
      );
    });
    return refreshing;
  };
  const ready = (async () => {
    // The shard workers start once the record is read: a Redis that is still starting is waited.
    for (;;) {
      try {
        await refresh();
        break;
      } catch (error) {
        if (closed) return;
        logger.warn(
          { err: { message: errorText(error) } },
          "sync worker waits for Redis to read the shard layouts",
        );
        await new Promise((resolve) => setTimeout(resolve, Math.min(refreshMs, 1_000)));
      }
    }
    if (!closed) timer = setInterval(guardedRefresh, refreshMs);
  })();

  return {
    ready,
    workers,
    refresh: guardedRefresh,
    isRunning: () =>
      !closed && workers.size > 0 && [...workers.values()].every((w) => w.isRunning()),
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      await ready.catch(() => {});
      await refreshing;
      await Promise.all([...workers.keys()].map(closeShard));
    },
  };
}
