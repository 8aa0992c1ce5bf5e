import { type JobsOptions, Queue } from "bullmq";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { recordDeadLetter, resolveDeadLetter } from "./dead-letter-record.ts";
import type { DeadLetterData, SyncJobData, SyncPriority } from "./jobs.ts";
import { QUEUE, queueOptions } from "./names.ts";

/** BullMQ priorities: lower runs first. Live events overtake backfill and resync. */
const PRIORITY: Record<SyncPriority, number> = { live: 2, bulk: 50 };

/**
 * A live job the limiter handed back to wait for its slot comes back ahead of live jobs the
 * limiter has not seen yet: in a burst, the line's next round would otherwise wait behind
 * every order of the burst still to be read, and each of its slots go unused meanwhile.
 */
export const LIVE_WAITER_PRIORITY = 1;

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

export const syncDedupId = (shop: string, orderId: string) => `${shop}:${orderId}`;

export class SyncQueues {
  readonly sync: Queue<SyncJobData>;
  readonly deadLetter: Queue<DeadLetterData>;

  readonly #jobOptions: JobsOptions;
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #lockWaitMs: number | undefined;

  constructor(
    connection: RedisConnection,
    prefix: string,
    retry: { attempts?: number; delayMs?: number } = {},
    options: { deadLetterLockWaitMs?: number } = {},
  ) {
    this.#lockWaitMs = options.deadLetterLockWaitMs;
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
  async enqueueSync(data: SyncJobData, options: { delayMs?: number } = {}) {
    return this.sync.add("sync", data, {
      ...this.#jobOptions,
      priority: PRIORITY[data.priority],
      deduplication: { id: syncDedupId(data.shop, data.orderId), keepLastIfActive: true },
      ...(options.delayMs ? { delay: options.delayMs } : {}),
    });
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
