import { type JobsOptions, Queue } from "bullmq";
import { Cluster, type Result } from "ioredis";
import { defineScripts, loadLua } from "../lib/lua.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { recordDeadLetter, resolveDeadLetter } from "./dead-letter-record.ts";
import type { DeadLetterData, SyncJobData } from "./jobs.ts";
import { QUEUE, queueOptions } from "./names.ts";

declare module "ioredis" {
  interface RedisCommander<Context> {
    liveArrivals(key: string, windowMs: number): Result<number, Context>;
  }
}

const SCRIPTS = { liveArrivals: loadLua(new URL("./lua/", import.meta.url), "live-arrivals-1") };

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
 */
export const SYNC_JOB_OPTIONS: JobsOptions = {
  attempts: 12,
  backoff: { type: "exponential", delay: 2_000, jitter: 0.5 },
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

const SYNC_JOB_NAME = "sync";

export const syncDedupId = (shop: string, orderId: string) => `${shop}:${orderId}`;

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
  arrivalsKey: string;
  share: LiveShare;
}

/**
 * An order's two queues: `sync`, one job per order that reconciles it with the provider, and
 * `deadLetter`, where an order whose sync failed for good waits for an operator.
 */
export class OrderQueues {
  readonly sync: Queue<SyncJobData>;
  readonly deadLetter: Queue<DeadLetterData>;

  readonly #jobOptions: JobsOptions;
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #lockWaitMs: number | undefined;
  readonly #share: LiveShare;

  constructor(
    connection: RedisConnection,
    prefix: string,
    retry: { attempts?: number; delayMs?: number } = {},
    options: { deadLetterLockWaitMs?: number; liveShare?: LiveShare } = {},
  ) {
    this.#lockWaitMs = options.deadLetterLockWaitMs;
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
    this.deadLetter = new Queue<DeadLetterData>(QUEUE.deadLetter, queueOptions(connection, prefix));
  }

  /**
   * Asks for one reconcile of this order. One job per order at a time: while a job for the order
   * waits, further events are absorbed into it (it reads the latest snapshot when it runs); while
   * one is active, the latest request is kept and runs after it (`keepLastIfActive`).
   */
  async enqueueSync(
    data: SyncJobData,
    options: { delayMs?: number; liveCount?: Promise<number> } = {},
  ) {
    return this.sync.add(SYNC_JOB_NAME, data, {
      ...this.#jobOptions,
      priority: await this.#priorityOf(data, options.liveCount),
      deduplication: { id: syncDedupId(data.shop, data.orderId), keepLastIfActive: true },
      ...(options.delayMs ? { delay: options.delayMs } : {}),
    });
  }

  /**
   * Counts one more live job of the shop and answers how many it queued over the last window
   * (see PRIORITY). The receiver starts the count beside its snapshot write, so that both go to
   * Redis in one round trip, and hands it to `enqueueSync` as `liveCount`.
   */
  countLive(shop: string): Promise<number> {
    return this.#redis.liveArrivals(this.#arrivalsKey(shop), this.#share.windowMs);
  }

  #arrivalsKey(shop: string): string {
    return `${this.#prefix}:live-arrivals:${shop}`;
  }

  /**
   * How a caller adds this order's live job within a script of its own (see LiveJobPlan), or
   * null when it must call `enqueueSync`: on a Redis Cluster the queue's keys live in another
   * slot than the caller's. Asynchronous, as the choice of the order's queue may need Redis.
   */
  async liveJobPlan(shop: string, orderId: string): Promise<LiveJobPlan | null> {
    if (this.#redis instanceof Cluster) return null;
    return {
      queue: this.sync,
      jobName: SYNC_JOB_NAME,
      jobOptions: this.#jobOptions,
      deduplicationId: syncDedupId(shop, orderId),
      priorities: { live: PRIORITY.live, flood: PRIORITY.flood },
      arrivalsKey: this.#arrivalsKey(shop),
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
    await Promise.all([this.sync.close(), this.deadLetter.close()]);
  }
}

/** BullMQ refuses ':' in custom job ids, so the parts are joined with '|'. */
export const deadLetterId = (shop: string, orderId: string | null, discriminator?: string) =>
  orderId ? `${shop}|${orderId}` : `${shop}|payload|${discriminator ?? Date.now()}`;
