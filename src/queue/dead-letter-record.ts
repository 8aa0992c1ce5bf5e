import { randomUUID } from "node:crypto";
import type { Queue } from "bullmq";
import { releaseLock } from "../lib/lock.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { DeadLetterIndex } from "./dead-letter-index.ts";
import type { DeadLetterData, DeadLetterFailure } from "./jobs.ts";

/** How many earlier failures an entry keeps (the newest ones). */
export const HISTORY_LIMIT = 20;
/** How long a retried entry's history waits for the order to fail again. */
export const RETIRED_TTL_MS = 30 * 24 * 3600_000;
/** A lock outlives any sane retry or record of one entry; it expires if its holder dies. */
const LOCK_TTL_MS = 15_000;

const lockKey = (prefix: string, id: string) => `${prefix}:dlq:lock:${id}`;
export const retiredKey = (prefix: string, id: string) => `${prefix}:dlq:retired:${id}`;
/**
 * A count of the shop's dead letters of category "config" recorded (among them those of a
 * Shopify token refused), kept until a read finds none of the kind it looks for. The reconnect's
 * safety net (src/ops/reconnect-net.ts) reads the dead-letter queue for a shop only while it is
 * set: every sweep of every shop reading every id of the queue would cost the most during an
 * outage, when the queue is longest.
 */
export const configDeadLettersKey = (prefix: string, shop: string) =>
  `${prefix}:dlq:config:{${shop}}`;

/**
 * One lock per dead-letter entry, shared by the operator's retry and discard and by the worker
 * that records a new failure. It closes the race where a retried order fails again before the
 * retry removed the old entry: the worker waits for the retry to finish, then records the new
 * failure as a fresh entry carrying the old history.
 */
export class DeadLetterLock {
  readonly #redis: RedisConnection;
  readonly #prefix: string;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  /** Takes the lock, or returns null when someone else holds it (and `waitMs` ran out). */
  async acquire(id: string, waitMs = 0): Promise<string | null> {
    const token = randomUUID();
    const deadline = Date.now() + waitMs;
    for (;;) {
      const ok = await this.#redis.set(lockKey(this.#prefix, id), token, "PX", LOCK_TTL_MS, "NX");
      if (ok === "OK") return token;
      if (Date.now() >= deadline) return null;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async release(id: string, token: string): Promise<void> {
    await releaseLock(this.#redis, lockKey(this.#prefix, id), token);
  }
}

/** The failure an entry describes now, as one line of the next entry's history. */
export function failureOf(data: DeadLetterData): DeadLetterFailure {
  return {
    at: data.lastFailedAt,
    topic: data.topic,
    category: data.category,
    reason: data.reason,
    errorClass: data.errorClass,
    ...(data.response?.status !== undefined ? { status: data.response.status } : {}),
  };
}

/** A new failure merged into what was known of the same entry (still queued, or retired). */
export function mergeFailure(
  previous: DeadLetterData | null,
  next: DeadLetterData,
): DeadLetterData {
  if (!previous) return next;
  const history = [...(previous.history ?? []), failureOf(previous)].slice(-HISTORY_LIMIT);
  const { lastRetry: _dropped, ...rest } = next;
  return {
    ...rest,
    firstFailedAt: previous.firstFailedAt,
    attempts: previous.attempts + next.attempts,
    history,
    ...(previous.retries ? { retries: previous.retries } : {}),
  };
}

/**
 * Records a failure that retrying will not fix, under the entry's lock. One entry per order: a
 * newer failure replaces the current one and pushes it into the history, keeping the first
 * failure time and adding up the attempts; an order that was retried from the queue and fails
 * again comes back with the history it had. The entry's row in the index (dead-letter-index.ts)
 * is marked before the job is written and written after: a writer that did not get the lock
 * leaves the mark, and the entry is read in full.
 */
export async function recordDeadLetter(
  queue: Queue<DeadLetterData>,
  redis: RedisConnection,
  prefix: string,
  id: string,
  data: DeadLetterData,
  lockWaitMs = LOCK_TTL_MS,
) {
  const lock = new DeadLetterLock(redis, prefix);
  // A retry holds the lock for a few round trips; wait for it rather than race it. A caller
  // that cannot wait long (the webhook receiver) records without it after its own wait.
  const token = await lock.acquire(id, lockWaitMs);
  const index = new DeadLetterIndex(redis, prefix);
  try {
    // Counted before it is written: a write that fails after leaves one read too many, never a
    // written entry that the count misses.
    if (data.category === "config") await redis.incr(configDeadLettersKey(prefix, data.shop));
    await index.writing(id);
    const existing = await queue.getJob(id);
    if (existing) {
      const merged = mergeFailure(existing.data, data);
      await existing.updateData(merged);
      if (token) await index.written(id, merged);
      return existing;
    }
    const retired = await redis.get(retiredKey(prefix, id));
    const merged = mergeFailure(retired ? (JSON.parse(retired) as DeadLetterData) : null, data);
    const job = await queue.add("dead-letter", merged, { jobId: id, removeOnComplete: true });
    if (token) await index.written(id, merged);
    if (retired) await redis.del(retiredKey(prefix, id));
    return job;
  } finally {
    if (token) await lock.release(id, token);
  }
}

/**
 * Changes an entry in place (a privacy request removing its bodies), under its lock like every
 * write of an entry, and with its row in the index kept as `recordDeadLetter` keeps it. `change`
 * is given the entry as it is now and returns the new data, or null to leave it. Returns whether
 * the entry changed.
 */
export async function rewriteDeadLetter(
  queue: Queue<DeadLetterData>,
  redis: RedisConnection,
  prefix: string,
  id: string,
  change: (data: DeadLetterData) => DeadLetterData | null,
): Promise<boolean> {
  const lock = new DeadLetterLock(redis, prefix);
  const token = await lock.acquire(id, LOCK_TTL_MS);
  const index = new DeadLetterIndex(redis, prefix);
  try {
    const job = await queue.getJob(id);
    const next = job?.data ? change(job.data) : null;
    if (!job || !next) return false;
    await index.writing(id);
    await job.updateData(next);
    if (token) await index.written(id, next);
    return true;
  } finally {
    if (token) await lock.release(id, token);
  }
}

/**
 * Removes an order's entry (and any history waiting for it) once the order synced after all:
 * for example a later webhook went through after the operator fixed the mapping, or a retried
 * order succeeded. Returns whether an entry was removed.
 */
export async function resolveDeadLetter(
  queue: Queue<DeadLetterData>,
  redis: RedisConnection,
  prefix: string,
  id: string,
): Promise<boolean> {
  const lock = new DeadLetterLock(redis, prefix);
  const token = await lock.acquire(id, LOCK_TTL_MS);
  try {
    await redis.del(retiredKey(prefix, id));
    const existing = await queue.getJob(id);
    if (!existing) return false;
    await new DeadLetterIndex(redis, prefix).forget([id]);
    await existing.remove();
    return true;
  } finally {
    if (token) await lock.release(id, token);
  }
}
