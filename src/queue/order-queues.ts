import { type JobsOptions, Queue } from "bullmq";
import { Cluster, type Result } from "ioredis";
import { defineScripts, loadLua } from "../lib/lua.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { withTraceContext } from "../lib/tracing.ts";
import { recordDeadLetter, resolveDeadLetter } from "./dead-letter-record.ts";
import type { DeadLetterData, SyncJobData } from "./jobs.ts";
import { QUEUE, queueOptions } from "./names.ts";
import {
  REGISTER_MS,
  registerLayout,
  resolveShardCount,
  shardOf,
  syncShardName,
  syncShardOptions,
} from "./sync-shards.ts";

declare module "ioredis" {
  interface RedisCommander<Context> {
    liveArrivals(
      current: string,
      previous: string,
      windowMs: number,
      now: number,
    ): Result<number, Context>;
  }
}

const SCRIPTS = { liveArrivals: loadLua(new URL("./lua/", import.meta.url), "live-arrivals-2") };

/** The arrival counter's script, for a caller that counts inside a script of its own. */
export const LIVE_ARRIVALS_LUA = SCRIPTS.liveArrivals.lua;

/**
 * BullMQ priorities: lower runs first; within one priority, first queued runs first. Live events
 * overtake backfill and resync (`bulk`), and among live jobs one store's flood does not hold up
 * another store:
 * - `live` (1): a live job of a shop that queued no more live jobs over the last window than its
 *   store's window can take. A quiet shop's order goes straight to a worker, as does the first
 *   window's worth of a burst.
 * - LIVE_WAITER_PRIORITY (2): a live job the limiter handed back to wait for its slot.
 * - `flood` (3): a shop's live jobs beyond what its window can take. They could not be sent this
 *   window anyway; the limiter puts them in its line as the workers read them.
 * A shop's own live jobs still run in the order they came, within a window's worth: while its
 * count is above the limit every new job of the shop is `flood`, and the limiter's line keeps
 * the order of those the workers have read. Only a flood job no worker has read yet can be
 * overtaken, by the orders of a later window the shop's count is back under the limit in: fewer
 * than `limit` of them.
 */
const PRIORITY = { live: 1, flood: 3, bulk: 50 } as const;

/**
 * A live job the limiter handed back to wait for its slot comes back ahead of a flood's jobs the
 * limiter has not seen yet: in a burst, the line's next round would otherwise wait behind every
 * order of the burst still to be read, and each of its slots go unused meanwhile. It comes back
 * behind other shops' live jobs, so that one store's round never delays a quiet store's order.
 */
export const LIVE_WAITER_PRIORITY = 2;

/** Each BullMQ priority of the sync queue by name, for the queue depth per priority gauge. */
export const SYNC_PRIORITY_LEVELS = {
  live: PRIORITY.live,
  waiter: LIVE_WAITER_PRIORITY,
  flood: PRIORITY.flood,
  bulk: PRIORITY.bulk,
} as const;

/** What a shop's store can take per window: above it, the shop's live jobs queue as a flood. */
export interface LiveShare {
  limit: number;
  windowMs: number;
}

/**
 * Retries for transient failures (5xx, timeouts, connection drops). Exponential with jitter so a
 * provider outage does not come back as a thundering herd; 12 attempts span roughly 3 hours,
 * about as long as Shopify keeps retrying a webhook. Rate limiting is not a failure: it moves
 * the job to the delayed set without spending an attempt (see the worker).
 *
 * Completed jobs are removed as they finish (`removeOnComplete: true`, one DEL where keeping
 * them cost an entry in the completed set, the finish time and return value written into the
 * job, and the trimming of the oldest: five commands more per order). Nothing reads a completed
 * sync job: the order's own record is in the database (`connector orders show`: its links,
 * synced mark and trace ID), `connector status` counts orders synced per shop from there, the
 * metrics count syncs, the order's pending job (deduplication) and the dead-letter queue look
 * only at jobs still to run, and the dashboard lists the sync shards' waiting, active, delayed
 * and failed jobs. Failed jobs are kept a week, for the dashboard.
 */
export const SYNC_JOB_OPTIONS: JobsOptions = {
  attempts: 12,
  backoff: { type: "exponential", delay: 2_000, jitter: 0.5 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600 },
};

export const SYNC_JOB_NAME = "sync";

export const syncDedupId = (shop: string, orderId: string) => `${shop}:${orderId}`;

/** The layout in use and the older ones still recorded (see sync-shards.ts). */
export interface SyncLayouts {
  current: number;
  /** Every recorded layout but the current one, oldest first. */
  past: number[];
  /** Every recorded layout, the current one included, oldest first. */
  recorded: number[];
}

/** The job states of an order's pending sync job, for the routing between layouts. */
const PENDING_STATES = new Set(["waiting", "prioritized", "delayed", "active", "waiting-children"]);

/**
 * What adding a live sync job takes for a caller that adds it inside its own script, as
 * `enqueueSync` would (the receiver's one-call path, src/ingest/lua/receive-order.lua): the
 * queue, the job's options without priority and deduplication, the two live priorities, the
 * shop's arrival counter and what its store takes per window (see PRIORITY).
 */
export interface LiveJobPlan {
  queue: Queue<SyncJobData>;
  jobName: string;
  jobOptions: JobsOptions;
  deduplicationId: string;
  priorities: { live: number; flood: number };
  /** The shop's arrival counters at `now` (see OrderQueues.countLive). */
  arrivalKeys(now: number): [current: string, previous: string];
  share: LiveShare;
}

/**
 * An order's queues: the sync queue, one job per order that reconciles it with the provider, in
 * SYNC_QUEUE_SHARDS shards by store (sync-shards.ts), and `deadLetter`, where an order whose sync
 * failed for good waits for an operator.
 */
export class OrderQueues {
  /**
   * The sync queue of layout 1 (`sync`): the only shard when SYNC_QUEUE_SHARDS is 1. With more
   * shards, use `syncQueueOf`, `allSyncQueues` or `enqueueSync`.
   */
  readonly sync: Queue<SyncJobData>;
  readonly deadLetter: Queue<DeadLetterData>;

  readonly #jobOptions: JobsOptions;
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #lockWaitMs: number | undefined;
  readonly #share: LiveShare;
  readonly #configuredShards: number | undefined;
  readonly #shardQueues = new Map<string, Queue<SyncJobData>>();
  #layouts: { value: SyncLayouts; at: number } | undefined;
  #refreshing: Promise<SyncLayouts> | undefined;

  constructor(
    connection: RedisConnection,
    prefix: string,
    retry: { attempts?: number; delayMs?: number } = {},
    options: {
      deadLetterLockWaitMs?: number;
      liveShare?: LiveShare;
      /** SYNC_QUEUE_SHARDS; unset: 1 on one Redis, the number of masters on a cluster. */
      syncShards?: number | undefined;
    } = {},
  ) {
    this.#lockWaitMs = options.deadLetterLockWaitMs;
    this.#configuredShards = options.syncShards;
    // The provider's documented budget when none is given (the configuration's defaults).
    this.#share = options.liveShare ?? { limit: 100, windowMs: 60_000 };
    defineScripts(connection, SCRIPTS);
    this.#jobOptions = {
      ...SYNC_JOB_OPTIONS,
      attempts: retry.attempts ?? SYNC_JOB_OPTIONS.attempts,
      backoff: { type: "exponential", delay: retry.delayMs ?? 2_000, jitter: 0.5 },
    };
    this.#redis = connection;
    this.#prefix = prefix;
    this.sync = new Queue<SyncJobData>(QUEUE.sync, queueOptions(connection, prefix));
    this.#shardQueues.set(QUEUE.sync, this.sync);
    this.deadLetter = new Queue<DeadLetterData>(QUEUE.deadLetter, queueOptions(connection, prefix));
    onQueueErrors(this.sync);
    onQueueErrors(this.deadLetter);
  }

  /**
   * Asks for one reconcile of this order. One job per order at a time: while a job for the order
   * waits, further events are absorbed into it (it reads the latest snapshot when it runs); while
   * one is active, the latest request is kept and runs after it (`keepLastIfActive`).
   */
  async enqueueSync(
    data: SyncJobData,
    options: {
      delayMs?: number;
      liveCount?: Promise<number>;
      /** A new id by construction (the receiver's, src/ingest/receive-order.ts); else BullMQ's. */
      jobId?: string;
    } = {},
  ) {
    const queue = await this.syncQueueFor(data.shop, data.orderId);
    return queue.add(SYNC_JOB_NAME, withTraceContext(data), {
      ...this.#jobOptions,
      ...(options.jobId ? { jobId: options.jobId } : {}),
      priority: await this.#priorityOf(data, options.liveCount),
      deduplication: { id: syncDedupId(data.shop, data.orderId), keepLastIfActive: true },
      ...(options.delayMs ? { delay: options.delayMs } : {}),
    });
  }

  /** Shard `index` of layout `count` (one Queue object per shard, kept until `close`). */
  syncQueue(count: number, index: number): Queue<SyncJobData> {
    const name = syncShardName(count, index);
    let queue = this.#shardQueues.get(name);
    if (!queue) {
      queue = new Queue<SyncJobData>(
        name,
        syncShardOptions(this.#redis, this.#prefix, count, index),
      );
      onQueueErrors(queue);
      this.#shardQueues.set(name, queue);
    }
    return queue;
  }

  /** A sync queue this object opened, by name (a job's `queueName`). */
  syncQueueNamed(name: string): Queue<SyncJobData> | undefined {
    return this.#shardQueues.get(name);
  }

  /**
   * The layout in use and the older ones still recorded: recorded again and read every
   * REGISTER_MS, in the background once known, so the receiver's path waits for no command of
   * its own but the first (`fresh` waits for a new read).
   */
  async layouts(options: { fresh?: boolean } = {}): Promise<SyncLayouts> {
    const known = this.#layouts;
    if (known && !options.fresh) {
      if (Date.now() - known.at >= REGISTER_MS) this.#refresh().catch(() => {});
      return known.value;
    }
    return this.#refresh();
  }

  #refresh(): Promise<SyncLayouts> {
    this.#refreshing ??= (async () => {
      try {
        const current = await resolveShardCount(this.#redis, this.#configuredShards);
        // BullMQ's job id counter of the queue `sync` exists once a job was ever added there.
        const legacyInUse = async () => (await this.#redis.exists(this.sync.keys.id ?? "")) === 1;
        const recorded = await registerLayout(this.#redis, this.#prefix, current, legacyInUse);
        const value = { current, past: recorded.filter((n) => n !== current), recorded };
        this.#layouts = { value, at: Date.now() };
        return value;
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  /** Every shard of every layout still recorded, the current layout's first. */
  async allSyncQueues(options: { fresh?: boolean } = {}): Promise<Queue<SyncJobData>[]> {
    const { current, past } = await this.layouts(options);
    return [current, ...past].flatMap((count) =>
      Array.from({ length: count }, (_, index) => this.syncQueue(count, index)),
    );
  }

  /** The store's shard in the current layout and in every older one still recorded. */
  async syncQueuesOfShop(shop: string): Promise<Queue<SyncJobData>[]> {
    const { current, recorded } = await this.layouts();
    return [...new Set([current, ...recorded])].map((count) =>
      this.syncQueue(count, shardOf(shop, count)),
    );
  }

  /** The store's shard in the current layout. */
  async syncQueueOf(shop: string): Promise<Queue<SyncJobData>> {
    const { current } = await this.layouts();
    return this.syncQueue(current, shardOf(shop, current));
  }

  /**
   * Where the order's next job goes: the shard of an older layout that holds a pending job of
   * the order (so that an order never has jobs in two shards), else its store's current shard.
   * Costs nothing while no older layout is recorded; while one is, a read or two per layout.
   */
  async syncQueueFor(shop: string, orderId: string): Promise<Queue<SyncJobData>> {
    const { current, past } = await this.layouts();
    for (const count of past) {
      const queue = this.syncQueue(count, shardOf(shop, count));
      if (await this.hasPendingJob(queue, shop, orderId)) return queue;
    }
    return this.syncQueue(current, shardOf(shop, current));
  }

  /** Whether the queue holds a job of the order that is still to run or running. */
  async hasPendingJob(queue: Queue<SyncJobData>, shop: string, orderId: string) {
    const jobId = await queue.getDeduplicationJobId(syncDedupId(shop, orderId));
    if (!jobId) return false;
    return PENDING_STATES.has(await queue.getJobState(jobId));
  }

  /**
   * Counts one more live arrival of the shop and answers how many it had over the last window
   * (see PRIORITY), by the caller's clock. What counts, on every path (the receiver's one script
   * and the cluster's separate calls alike): a live delivery that queues the order's job, that
   * is a stored part, the same version again or a hint, counted once each, also when BullMQ's
   * deduplication absorbs it into the order's waiting job; and a live job queued without a
   * receiver (a dead letter's retry). A duplicate delivery (its mark already there) and an older
   * one than the snapshot keeps queue nothing and are not counted: so the receiver counts only
   * once the snapshot write has said which it is, and hands the count to `enqueueSync` as
   * `liveCount`.
   */
  countLive(shop: string, now = Date.now()): Promise<number> {
    const [current, previous] = this.#arrivalKeys(shop, now);
    return this.#redis.liveArrivals(current, previous, this.#share.windowMs, now);
  }

  /**
   * The shop's arrival counters of the window `now` falls in and of the one before
   * (live-arrivals-2.lua), in the shop's slot. Named apart from the older counter
   * (`live-arrivals:<shop>`, a hash), which is left to expire: two windows.
   */
  #arrivalKeys(shop: string, now: number): [current: string, previous: string] {
    const index = Math.floor(now / this.#share.windowMs);
    const base = `${this.#prefix}:arrivals:{${shop}}:`;
    return [`${base}${index}`, `${base}${index - 1}`];
  }

  /**
   * How a caller adds this order's live job within a script of its own (see LiveJobPlan), or
   * null when it must call `enqueueSync`: on a Redis Cluster the queue's keys live in another
   * slot than the caller's. Asynchronous, as the choice of the order's queue may need Redis.
   */
  async liveJobPlan(shop: string, orderId: string): Promise<LiveJobPlan | null> {
    if (this.#redis instanceof Cluster) return null;
    // While an older layout is recorded the order's pending job may sit in an old shard:
    // enqueueSync looks for it there.
    const { current, past } = await this.layouts();
    if (past.length > 0) return null;
    return {
      queue: this.syncQueue(current, shardOf(shop, current)),
      jobName: SYNC_JOB_NAME,
      jobOptions: this.#jobOptions,
      deduplicationId: syncDedupId(shop, orderId),
      priorities: { live: PRIORITY.live, flood: PRIORITY.flood },
      arrivalKeys: (now) => this.#arrivalKeys(shop, now),
      share: this.#share,
    };
  }

  /** A live job's priority by how many live jobs its shop queued over the last window. */
  async #priorityOf(data: SyncJobData, liveCount: Promise<number> | undefined): Promise<number> {
    if (data.priority === "bulk") return PRIORITY.bulk;
    const queued = await (liveCount ?? this.countLive(data.shop));
    return queued > this.#share.limit ? PRIORITY.flood : PRIORITY.live;
  }

  /**
   * Records a failure that retrying will not fix. One entry per order (the newest failure
   * replaces the older one and joins its history, keeping the first failure time); payload
   * failures get their own. See `dead-letter-record.ts`.
   */
  async addDeadLetter(id: string, data: DeadLetterData) {
    return recordDeadLetter(this.deadLetter, this.#redis, this.#prefix, id, data, this.#lockWaitMs);
  }

  /** Removes an order's dead letter once the order synced (see dead-letter-record.ts). */
  async resolveDeadLetter(shop: string, orderId: string): Promise<boolean> {
    return resolveDeadLetter(
      this.deadLetter,
      this.#redis,
      this.#prefix,
      deadLetterId(shop, orderId),
    );
  }

  async close() {
    await Promise.all([...this.#shardQueues.values(), this.deadLetter].map((q) => q.close()));
  }
}

/** BullMQ refuses ':' in custom job ids, so the parts are joined with '|'. */
export const deadLetterId = (shop: string, orderId: string | null, discriminator?: string) =>
  orderId ? `${shop}|${orderId}` : `${shop}|payload|${discriminator ?? Date.now()}`;
