import { randomUUID } from "node:crypto";
import { DelayedError, type Job, Queue } from "bullmq";
import type { Logger } from "pino";
import { BULK_CONCURRENCY, type DeadLetters, type RetryOutcome } from "../engine/dead-letters.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { configDeadLettersKey } from "../queue/dead-letter-record.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import { RECONNECT_HINT } from "../shopify/admin-client.ts";

/** The job name of a bulk retry on the maintenance queue. */
export const BULK_RETRY_JOB = "dlq-retry";
/**
 * The job name of "resume what waited for the shop's token", queued when a shop paused because
 * Shopify refused its token gets a new one (the merchant opens the app, `shops add`): a bulk
 * retry of the dead letters that refusal caused, after the shop's paused backfill is resumed
 * and before the claims' order tags Shopify refused are applied again.
 */
export const RECONNECT_JOB = "shop-reconnected";
/** Every bulk retry's job id starts so (the rest is random): the API reads no other job. */
const ID_PREFIX = "dlq-retry-";
/** A reconnect's job id: a bulk retry's, readable at the same address. */
const RECONNECT_ID_PREFIX = `${ID_PREFIX}reconnect-`;
/** The reasons of the entries left that a bulk retry keeps apart; the rest are counted together. */
const MAX_REASONS = 20;
/** The entry ids kept per reason, to look at with `GET /admin/api/dead-letters/:id`. */
const IDS_PER_REASON = 10;
/** How long a finished bulk retry stays readable (and at most how many are kept). */
const KEEP = { age: 7 * 86_400, count: 100 };

export interface BulkRetryFilter {
  shop?: string | undefined;
  reason?: string | undefined;
  /** Only entries whose reason contains this text (a reconnect's: the refused token). */
  reasonIncludes?: string | undefined;
}

/** The dead letters a shop's reconnect retries: those Shopify's refusal of its token caused. */
export const reconnectFilter = (shop: string): BulkRetryFilter => ({
  shop,
  reason: "config",
  reasonIncludes: RECONNECT_HINT,
});

/** Whether the maintenance queue's job is one the bulk retry processor runs. */
export const isBulkRetryJob = (name: string) => name === BULK_RETRY_JOB || name === RECONNECT_JOB;

export interface BulkRetryJobData {
  filter: BulkRetryFilter;
  requestedAt: string;
  /** The matching ids, read once when the job first runs: a resumed job goes on from them. */
  ids?: string[];
}

/** Entries a bulk retry left in the queue for one reason: how many, and the first few ids. */
export interface LeftReason {
  result: "skipped" | "failed";
  message: string;
  count: number;
  ids: string[];
}

/** How far a bulk retry job has come (its BullMQ progress), and its result once finished. */
export interface BulkRetryCounts {
  matched: number;
  /** Entries retried so far (queued again, skipped or failed). */
  processed: number;
  /** Queued again (or their webhook body re-ingested): they left the dead-letter queue. */
  retried: number;
  skipped: number;
  failed: number;
  /** Why the entries not retried stayed, the most frequent reason first. */
  left: LeftReason[];
  /** A reconnect's job: whether it resumed a paused backfill of the shop. */
  backfillResumed?: boolean;
  /**
   * A reconnect's job, once done: the orders whose claims' tags it applied again, and how many
   * of them are still not tagged (each claim records why).
   */
  claimTags?: { tried: number; untagged: number };
}

/** What a shop's reconnect job does besides its bulk retry (the worker role's side). */
export interface ReconnectSteps {
  /** Resumes the shop's paused backfill from its cursor; answers whether it had one. */
  resumeBackfill(shop: string): Promise<boolean>;
  /** Applies again the claims' order tags Shopify refused (the token, or a scope since granted). */
  retagClaims(shop: string): Promise<{ tried: number; untagged: number }>;
}

export type BulkRetryStatus = "queued" | "running" | "completed" | "failed";

/** A bulk retry as the admin API answers it. */
export interface BulkRetryView extends BulkRetryCounts {
  id: string;
  status: BulkRetryStatus;
  finished: boolean;
  filter: BulkRetryFilter;
  requestedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Why the job failed, or why its last attempt did while it waits for the next one. */
  error?: string;
}

/** One job per filter while it waits (the text's part only when given: the keys jobs had before). */
const dedupeKey = (filter: BulkRetryFilter) =>
  `${BULK_RETRY_JOB}:shop=${filter.shop ?? "*"}:reason=${filter.reason ?? "*"}${
    filter.reasonIncludes ? `:text=${filter.reasonIncludes}` : ""
  }`;
/** One reconnect job per shop while it waits, however many reconnects ask (see the processor). */
const reconnectKey = (shop: string) => `${RECONNECT_JOB}:shop=${shop}`;

const emptyCounts = (matched: number): BulkRetryCounts => ({
  matched,
  processed: 0,
  retried: 0,
  skipped: 0,
  failed: 0,
  left: [],
});

function isCounts(value: unknown): value is BulkRetryCounts {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as BulkRetryCounts).processed === "number"
  );
}

/** Adds a chunk's outcomes to the counts (in place). */
function tally(counts: BulkRetryCounts, outcomes: RetryOutcome[]) {
  for (const o of outcomes) {
    counts.processed++;
    if (o.result === "queued" || o.result === "reingested") {
      counts.retried++;
      continue;
    }
    counts[o.result]++;
    let reason = counts.left.find((r) => r.result === o.result && r.message === o.message);
    if (!reason && counts.left.length >= MAX_REASONS) {
      const other = `other reasons (more than ${MAX_REASONS}): see each entry's lastRetry`;
      reason = counts.left.find((r) => r.result === o.result && r.message === other);
      if (!reason) {
        reason = { result: o.result, message: other, count: 0, ids: [] };
        counts.left.push(reason);
      }
    }
    if (!reason) {
      reason = { result: o.result, message: o.message, count: 0, ids: [] };
      counts.left.push(reason);
    }
    reason.count++;
    if (reason.ids.length < IDS_PER_REASON) reason.ids.push(o.id);
  }
  counts.left.sort((a, b) => b.count - a.count);
}

/**
 * The admin API's side of a bulk retry: a job on the maintenance queue, run by the worker role.
 * Two requests with the same filter while one is queued or running get the same job (BullMQ's
 * deduplication, released when the job finishes); a finished one stays readable for a week.
 */
export class BulkRetryQueue {
  readonly queue: Queue<BulkRetryJobData, BulkRetryCounts>;

  readonly #redis: RedisConnection;
  readonly #prefix: string;

  constructor(connection: RedisConnection, prefix: string) {
    this.queue = new Queue(QUEUE.maintenance, queueOptions(connection, prefix));
    this.#redis = connection;
    this.#prefix = prefix;
    onQueueErrors(this.queue);
  }

  /** Queues a bulk retry of the filter's entries, or answers the one already queued or running. */
  start(filter: BulkRetryFilter): Promise<{ id: string; created: boolean }> {
    return this.#add(BULK_RETRY_JOB, filter, dedupeKey(filter), ID_PREFIX);
  }

  /**
   * Queues what waited for the shop's token (RECONNECT_JOB), or answers the shop's job that waits
   * to start: the web process and the CLI only queue it, a worker runs it.
   */
  async reconnected(shop: string): Promise<{ id: string; created: boolean }> {
    // The shop's config dead letters are counted as if one had just been recorded: should this
    // job never run, the sweep's safety net (reconnect-net.ts) then reads the dead-letter queue
    // for the shop, and finds entries of the refusal recorded before their count existed too.
    await this.#redis.incr(configDeadLettersKey(this.#prefix, shop));
    return this.#add(RECONNECT_JOB, reconnectFilter(shop), reconnectKey(shop), RECONNECT_ID_PREFIX);
  }

  /**
   * The id of the shop's reconnect job that waits to start, runs, or waits to go on (stopped by
   * a shutdown, or between two attempts), or null. Read before the reconciliation sweep queues
   * the job again (reconnect-net.ts): the deduplication covers only a job that waits to start.
   * Only the ids of the queue's unfinished jobs are read, and the reconnect jobs among them.
   */
  async reconnectInFlight(shop: string): Promise<string | null> {
    const ids = await this.queue.getRanges(["active", "waiting", "prioritized", "delayed"], 0, -1);
    for (const id of new Set(ids)) {
      if (!id.startsWith(RECONNECT_ID_PREFIX)) continue;
      const job = await this.queue.getJob(id);
      if (job?.name === RECONNECT_JOB && job.data.filter.shop === shop) return id;
    }
    return null;
  }

  async #add(
    name: string,
    filter: BulkRetryFilter,
    deduplicationId: string,
    idPrefix: string,
  ): Promise<{ id: string; created: boolean }> {
    const jobId = `${idPrefix}${randomUUID()}`;
    const job = await this.queue.add(
      name,
      {
        filter: {
          ...(filter.shop ? { shop: filter.shop } : {}),
          ...(filter.reason ? { reason: filter.reason } : {}),
          ...(filter.reasonIncludes ? { reasonIncludes: filter.reasonIncludes } : {}),
        },
        requestedAt: new Date().toISOString(),
      },
      {
        jobId,
        deduplication: { id: deduplicationId },
        // A failure (Redis gone) is tried again from where it stopped.
        attempts: 3,
        backoff: { type: "exponential", delay: 5_000 },
        removeOnComplete: KEEP,
        removeOnFail: KEEP,
      },
    );
    const id = job.id ?? jobId;
    return { id, created: id === jobId };
  }

  /** The bulk retry as the API shows it, or null for an unknown id (or another kind of job). */
  async view(id: string): Promise<BulkRetryView | null> {
    if (!id.startsWith(ID_PREFIX)) return null;
    // The state first, then the job: a job read first could finish before its state is read,
    // and its result (read before it was written) would then be missing from a finished job,
    // which is what a job taken by an older worker looks like.
    const state = await this.queue.getJobState(id);
    const job = await this.queue.getJob(id);
    if (!job?.id || !isBulkRetryJob(job.name)) return null;
    // A worker of a version before bulk retry jobs completes one without running it.
    const notRun = state === "completed" && !isCounts(job.returnvalue);
    const status: BulkRetryStatus =
      state === "completed" && !notRun
        ? "completed"
        : state === "failed" || notRun
          ? "failed"
          : state === "active"
            ? "running"
            : "queued";
    const counts = isCounts(job.returnvalue)
      ? job.returnvalue
      : isCounts(job.progress)
        ? job.progress
        : emptyCounts(0);
    const error = notRun
      ? job.name === RECONNECT_JOB
        ? // The sweep's safety net (reconnect-net.ts) queues it again once a worker of this
          // version sweeps the shop, if the shop is usable and something still waits.
          "a worker of an older version took the job without running it: the shop's next reconciliation sweep by a worker of this version queues it again (every RECONCILE_INTERVAL_MS), or ask again once every worker runs this version"
        : "a worker of an older version took the job without running it: ask again once every worker runs this version"
      : job.failedReason;
    return {
      id: job.id,
      status,
      finished: status === "completed" || status === "failed",
      filter: job.data.filter,
      requestedAt: job.data.requestedAt,
      startedAt: job.processedOn ? new Date(job.processedOn).toISOString() : null,
      finishedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
      ...counts,
      // A failed attempt's reason too while the job waits for its next one.
      ...(status !== "completed" && error ? { error } : {}),
    };
  }

  close() {
    return this.queue.close();
  }
}

/**
 * The maintenance worker's processor of a bulk retry. The matching ids are read once and saved
 * in the job, then retried BULK_CONCURRENCY at a time, each under its entry's lock; the counts
 * are saved as the job's progress after every chunk. A job stopped by a shutdown goes back to
 * the queue between two chunks and resumes where it stopped; one whose worker died resumes from
 * its last saved chunk (the entries of the chunk in flight are tried again: those it had queued
 * are then counted as skipped, "not in the dead-letter queue").
 *
 * A reconnect's job (RECONNECT_JOB) resumes the shop's paused backfill first, when it first
 * runs, and applies the claims' refused order tags again last (a resumed job finds the backfill
 * no longer paused, and tags already applied are not applied twice). It is one per shop only
 * while it waits: once it starts, a new reconnect queues another job, and the two share the
 * entries they both read under each entry's lock. Its log says it in two lines too, at its
 * start (the shop, how many entries matched) and at its end (the counts).
 */
export function createBulkRetryProcessor(deps: {
  deadLetters: DeadLetters;
  logger: Logger;
  /** A reconnect's other steps; without them a reconnect's job fails, naming what is missing. */
  reconnect?: ReconnectSteps | undefined;
}) {
  return async function processBulkRetry(
    job: Job<BulkRetryJobData, BulkRetryCounts>,
    token?: string,
    signal?: AbortSignal,
  ): Promise<BulkRetryCounts> {
    const { filter } = job.data;
    const { reasonIncludes: _text, ...where } = filter;
    const log = deps.logger.child({ jobId: job.id, ...where });
    const reconnect = job.name === RECONNECT_JOB ? deps.reconnect : undefined;
    const shop = filter.shop;
    if (job.name === RECONNECT_JOB && (!reconnect || !shop)) {
      throw new Error(`${RECONNECT_JOB} needs a shop and the worker role's reconnect steps`);
    }
    const lines =
      job.name === RECONNECT_JOB
        ? {
            start: "resuming what waited for the shop's token",
            resumes: "resuming what waited for the shop's token goes on",
            stopped: "resuming what waited for the shop's token stopped; it goes on",
            done: "what waited for the shop's token resumed",
          }
        : {
            start: "dead letter bulk retry",
            resumes: "dead letter bulk retry resumes",
            stopped: "dead letter bulk retry stopped; it resumes",
            done: "dead letter bulk retry done",
          };
    let ids = job.data.ids;
    let counts: BulkRetryCounts;
    if (!ids) {
      // A reconnect asked from now on gets a job of its own, which sees what this one's look
      // (at the backfill, at the dead letters) would miss: work that waited for a later token.
      if (reconnect) await job.removeDeduplicationKey();
      const backfillResumed = reconnect && shop ? await reconnect.resumeBackfill(shop) : undefined;
      ids = await deps.deadLetters.matchingIds(filter);
      await job.updateData({ ...job.data, ids });
      counts = {
        ...emptyCounts(ids.length),
        ...(backfillResumed === undefined ? {} : { backfillResumed }),
      };
      log.info(
        { matched: ids.length, ...(backfillResumed === undefined ? {} : { backfillResumed }) },
        lines.start,
      );
    } else {
      counts = isCounts(job.progress) ? job.progress : emptyCounts(ids.length);
      log.info({ matched: ids.length, processed: counts.processed }, lines.resumes);
    }
    await job.updateProgress(counts);
    while (counts.processed < ids.length) {
      if (signal?.aborted) {
        // A shutdown: back to the queue; the next worker goes on from counts.processed.
        log.info({ processed: counts.processed }, lines.stopped);
        await job.moveToDelayed(Date.now() + 250, token);
        throw new DelayedError();
      }
      const chunk = ids.slice(counts.processed, counts.processed + BULK_CONCURRENCY);
      tally(counts, await deps.deadLetters.retryEach(chunk));
      await job.updateProgress(counts);
    }
    if (reconnect && shop) {
      counts.claimTags = await reconnect.retagClaims(shop);
      await job.updateProgress(counts);
    }
    const { left: _left, ...summary } = counts;
    log.info(summary, lines.done);
    return counts;
  };
}
