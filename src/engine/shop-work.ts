import type { Job, JobType, Queue } from "bullmq";
import { type RedisConnection, scanKeys } from "../lib/redis-keys.ts";
import { DeadLetterIndex } from "../queue/dead-letter-index.ts";
import { retiredKey, rewriteDeadLetter } from "../queue/dead-letter-record.ts";
import type { DeadLetterData } from "../queue/jobs.ts";

/** Where retried dead letters wait (full copies, bodies included) until their sync succeeds. */
export interface RetiredStore {
  redis: RedisConnection;
  prefix: string;
}

async function forEachRetired(
  store: RetiredStore,
  shop: string,
  visit: (key: string, data: DeadLetterData) => Promise<void>,
): Promise<void> {
  for await (const keys of scanKeys(store.redis, retiredKey(store.prefix, `${shop}|*`))) {
    for (const key of keys) {
      const json = await store.redis.get(key);
      if (json) await visit(key, JSON.parse(json) as DeadLetterData);
    }
  }
}

/** The job states that are still to run: an uninstall drops these (an active job finishes). */
const QUEUED_STATES: JobType[] = ["waiting", "prioritized", "delayed", "waiting-children"];
/** Wherever a dead letter may sit, whether or not something processes the queue. */
const ANY_STATE: JobType[] = [...QUEUED_STATES, "active", "completed", "failed"];
const PAGE = 500;

/**
 * The ids of one shop's dead letters, wherever they sit: every entry's id starts with its shop
 * (`deadLetterId`), so the other shops' entries are never read.
 */
async function deadLetterIdsOf(queue: Queue<DeadLetterData>, shop: string): Promise<string[]> {
  const ids = await queue.getRanges(ANY_STATE, 0, -1, true);
  return ids.filter((id) => id.startsWith(`${shop}|`));
}

async function forEachJob<T>(
  queue: Queue<T>,
  states: JobType[],
  visit: (job: Job<T>) => Promise<void>,
): Promise<void> {
  // Pages are read from the end so removals do not shift the pages still to read.
  const counts = await queue.getJobCounts(...states);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  for (let end = total - 1; end >= 0; end -= PAGE) {
    const jobs = await queue.getJobs(states, Math.max(0, end - PAGE + 1), end, true);
    for (const job of jobs) if (job) await visit(job as Job<T>);
  }
}

/**
 * Removes every job of one shop that has not started (uninstall, shop/redact). BullMQ removes a
 * job's deduplication key with it, so a reinstall can queue the same order again.
 */
export async function dropQueuedWork<T extends { shop: string }>(
  queue: Queue<T>,
  shop: string,
): Promise<number> {
  let removed = 0;
  await forEachJob(queue, QUEUED_STATES, async (job) => {
    if (job.data?.shop !== shop) return;
    try {
      await job.remove();
      removed++;
    } catch {
      // It started or finished between the read and the removal: the worker skips the shop.
    }
  });
  return removed;
}

/** Which dead letters a privacy request concerns. */
export interface DeadLetterMatch {
  shop: string;
  orderIds: readonly string[];
  /** Strings whose presence in a stored payload marks it as the customer's (id, email). */
  needles: readonly string[];
}

const matches = (data: DeadLetterData, m: DeadLetterMatch) => {
  if (data.shop !== m.shop) return false;
  if (data.orderId && m.orderIds.includes(data.orderId)) return true;
  const stored = JSON.stringify([data.rawPayload, data.request?.body, data.response?.body]);
  return m.needles.some((needle) => needle.length > 0 && stored.includes(needle));
};

/**
 * customers/redact: the dead letters that hold the customer's orders keep their reason, fields
 * and timings (an operator still sees what failed) but lose every stored body. Only the shop's
 * entries are read (each once); one that matches is changed under its lock, read again there,
 * so a failure recorded meanwhile is neither lost nor left with its bodies.
 */
export async function redactDeadLetters(
  queue: Queue<DeadLetterData>,
  retired: RetiredStore,
  match: DeadLetterMatch,
  redactedAt: string,
): Promise<number> {
  const redact = (data: DeadLetterData) =>
    matches(data, match) && !data.redactedAt ? withoutBodies(data, redactedAt) : null;
  let redacted = 0;
  const ids = await deadLetterIdsOf(queue, match.shop);
  for (let i = 0; i < ids.length; i += PAGE) {
    const jobs = await Promise.all(ids.slice(i, i + PAGE).map((id) => queue.getJob(id)));
    for (const job of jobs) {
      if (!job?.id || !redact(job.data)) continue;
      if (await rewriteDeadLetter(queue, retired.redis, retired.prefix, job.id, redact)) {
        redacted++;
      }
    }
  }
  await forEachRetired(retired, match.shop, async (key, data) => {
    if (!matches(data, match) || data.redactedAt) return;
    await retired.redis.set(key, JSON.stringify(withoutBodies(data, redactedAt)), "KEEPTTL");
    redacted++;
  });
  return redacted;
}

function withoutBodies(data: DeadLetterData, redactedAt: string): DeadLetterData {
  const { rawPayload: _raw, request, response, ...rest } = data;
  return {
    ...rest,
    ...(request ? { request: { method: request.method, path: request.path } } : {}),
    ...(response
      ? {
          response: {
            ...(response.status !== undefined ? { status: response.status } : {}),
            ...(response.requestId ? { requestId: response.requestId } : {}),
          },
        }
      : {}),
    redactedAt,
  };
}

/** shop/redact: every dead letter of the shop goes (and its row in the index, first). */
export async function removeShopDeadLetters(
  queue: Queue<DeadLetterData>,
  retired: RetiredStore,
  shop: string,
): Promise<number> {
  let removed = 0;
  // By id: nothing of the entries is read. Their rows go first, in one call, then the jobs.
  const ids = await deadLetterIdsOf(queue, shop);
  await new DeadLetterIndex(retired.redis, retired.prefix).forget(ids);
  for (const id of ids) removed += await queue.remove(id);
  await forEachRetired(retired, shop, async (key) => {
    removed += await retired.redis.del(key);
  });
  return removed;
}

/**
 * How many jobs of one shop wait or run, reading at most `limit` jobs of the queue (a status
 * page must not walk a backlog of millions): `truncated` says the count is a lower bound.
 */
export async function countQueuedForShop<T extends { shop: string }>(
  queue: Queue<T>,
  shop: string,
  limit = 5_000,
): Promise<{ count: number; truncated: boolean }> {
  const states: JobType[] = [...QUEUED_STATES, "active"];
  const counts = await queue.getJobCounts(...states);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  let count = 0;
  for (let start = 0; start < Math.min(total, limit); start += PAGE) {
    const end = Math.min(start + PAGE, limit) - 1;
    const jobs = await queue.getJobs(states, start, end, true);
    for (const job of jobs) if (job?.data?.shop === shop) count++;
  }
  return { count, truncated: total > limit };
}
