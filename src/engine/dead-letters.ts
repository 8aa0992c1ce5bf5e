import type { Job } from "bullmq";
import type { Logger } from "pino";
import type { SnapshotStore } from "../ingest/snapshot-store.ts";
import type { IngestOutcome, VerifiedWebhook } from "../ingest/webhook-ingest.ts";
import { errorText } from "../lib/redact.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { DeadLetterIndex, type DeadLetterRow, rowOf } from "../queue/dead-letter-index.ts";
import { DeadLetterLock, RETIRED_TTL_MS, retiredKey } from "../queue/dead-letter-record.ts";
import type { DeadLetterData, SyncPriority } from "../queue/jobs.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import { normalizeWebhook, parseShopifyJson } from "../shopify/index.ts";
import type { LinkRepository, ShopRecord, ShopRepository } from "../store/index.ts";
import type { ShopDomain, SourceOrder } from "../sync/source-order.ts";

/** An entry as the operator sees it: the record and its id in the queue. */
export interface DeadLetterEntry extends DeadLetterData {
  id: string;
  /** `order`: a sync that failed; `payload`: a webhook body that could not be used at all. */
  kind: "order" | "payload";
}

/** One line of a listing: everything but the request, response and raw payload. */
export type DeadLetterSummary = Omit<DeadLetterEntry, "request" | "response" | "rawPayload"> & {
  status?: number;
};

/** The longest text an operator may filter dead letters' reasons by. */
export const REASON_TEXT_MAX = 200;

export interface DeadLetterFilter {
  shop?: string | undefined;
  /** The entry's category (see FailureCategory). */
  reason?: string | undefined;
  /**
   * Only entries whose reason contains this text, case-sensitive (a cause, such as a refused
   * Shopify token; an operator's `--reason-includes`, at most REASON_TEXT_MAX characters).
   */
  reasonIncludes?: string | undefined;
}

export interface DeadLetterPage {
  total: number;
  offset: number;
  limit: number;
  entries: DeadLetterSummary[];
}

export type RetryResult =
  /** A sync job of the order was queued (or an existing one will run); the entry left the queue. */
  | "queued"
  /** The stored webhook body went through the receiver again; the entry left the queue. */
  | "reingested"
  /** Not re-queued, for a reason the operator can act on; the entry stays (when it exists). */
  | "skipped"
  /** Re-queueing failed (Redis error…); the entry stays. */
  | "failed";

export interface RetryOutcome {
  id: string;
  result: RetryResult;
  message: string;
}

export interface BulkRetryReport {
  matched: number;
  retried: number;
  skipped: number;
  failed: number;
  outcomes: RetryOutcome[];
}

/** How far a bulk retry has come: entries done of those matched, and their outcomes so far. */
export interface BulkRetryProgress {
  done: number;
  matched: number;
  retried: number;
  skipped: number;
  failed: number;
}

export interface DeadLettersDeps {
  queues: OrderQueues;
  redis: RedisConnection;
  prefix: string;
  snapshots: SnapshotStore;
  shops: ShopRepository;
  /** Where a discard is recorded, so that a restore after Redis lost the queue leaves it out. */
  links: Pick<LinkRepository, "markDiscarded">;
  logger: Logger;
  /** Fetches an order's current state from Shopify when no snapshot is stored any more. */
  refetchOrder?: ((shop: ShopRecord, orderId: string) => Promise<SourceOrder | null>) | undefined;
  /** Runs a stored webhook body through the receiver again (payload entries). */
  reingest?: ((webhook: VerifiedWebhook) => Promise<IngestOutcome>) | undefined;
}

const PAGE = 200;
/** How many entries a bulk retry retries at once. */
export const BULK_CONCURRENCY = 8;

/**
 * The dead-letter queue as an operator uses it: list and filter, show one entry in full, retry
 * one or every matching entry, discard. A retry never replays the stored payload of an order:
 * it queues a sync of the order, which reads the order's latest snapshot and the shop's current
 * settings, so a fix made in the meantime (a location mapping, a credential) takes effect.
 *
 * Every retry and discard of an entry runs under the entry's lock (shared with the worker that
 * records failures), so two retries of the same entry, at once or one after the other, queue it
 * once and report the second as skipped; an entry leaves the queue only after its sync job is
 * queued, and if that sync fails again the entry comes back with its history.
 */
export class DeadLetters {
  readonly #deps: DeadLettersDeps;
  readonly #lock: DeadLetterLock;
  readonly #index: DeadLetterIndex;

  constructor(deps: DeadLettersDeps) {
    this.#deps = deps;
    this.#lock = new DeadLetterLock(deps.redis, deps.prefix);
    this.#index = new DeadLetterIndex(deps.redis, deps.prefix);
  }

  get #queue() {
    return this.#deps.queues.deadLetter;
  }

  /** Every entry id, oldest first, read in one call (a stable view for paging and bulk work). */
  async #ids(filter: DeadLetterFilter): Promise<string[]> {
    const ids = await this.#queue.getRanges(["waiting"], 0, -1, true);
    const unique = [...new Set(ids)];
    return filter.shop ? unique.filter((id) => id.startsWith(`${filter.shop}|`)) : unique;
  }

  async #load(ids: string[]): Promise<DeadLetterEntry[]> {
    const entries: DeadLetterEntry[] = [];
    for (let i = 0; i < ids.length; i += PAGE) {
      const jobs = await Promise.all(ids.slice(i, i + PAGE).map((id) => this.#queue.getJob(id)));
      for (const job of jobs) if (job?.id) entries.push(toEntry(job as Job<DeadLetterData>));
    }
    return entries;
  }

  /**
   * The id and row of every entry matching the filter, oldest first. The rows come from the
   * index (a few hundred bytes per entry); an entry without a row it can trust is read in full
   * once, and its row filled in for the next read. A queue of 100,000 entries after a long
   * outage is counted and filtered without reading any entry's request, response or body.
   */
  async #matching(filter: DeadLetterFilter): Promise<{ id: string; row: DeadLetterRow }[]> {
    const rowsBefore = await this.#index.rowCount();
    const ids = await this.#ids(filter);
    const indexed = await this.#index.read(ids);
    // The index held more rows than the queue's entries have, before the ids were read and
    // after (an entry removed meanwhile counts only before, one added only after): rows of
    // entries gone. Swept by a read of the whole queue, when it happens; else it costs nothing.
    const found = indexed.filter((r) => r.state === "row").length;
    if (!filter.shop && rowsBefore > found && (await this.#index.rowCount()) > found) {
      await this.#index.sweep(ids, async (id) => (await this.#queue.getJobState(id)) !== "unknown");
    }
    const rows = new Map<string, DeadLetterRow>();
    const unread: string[] = [];
    const fillable = new Set<string>();
    ids.forEach((id, k) => {
      const found = indexed[k];
      if (found?.state === "row") rows.set(id, found.row);
      else {
        unread.push(id);
        if (found?.state === "missing") fillable.add(id);
      }
    });
    for (let i = 0; i < unread.length; i += PAGE) {
      const entries = await this.#load(unread.slice(i, i + PAGE));
      for (const entry of entries) rows.set(entry.id, rowOf(entry));
      await this.#index.fill(
        entries.filter((e) => fillable.has(e.id)).map((e) => ({ id: e.id, data: e })),
      );
    }
    const matching: { id: string; row: DeadLetterRow }[] = [];
    for (const id of ids) {
      const row = rows.get(id);
      if (
        row &&
        (!filter.shop || row.shop === filter.shop) &&
        (!filter.reason || row.category === filter.reason) &&
        (!filter.reasonIncludes || row.reason.includes(filter.reasonIncludes))
      )
        matching.push({ id, row });
    }
    return matching;
  }

  /** Newest first. Without a reason filter only the page is loaded. */
  async list(
    filter: DeadLetterFilter = {},
    page: { offset?: number; limit?: number } = {},
  ): Promise<DeadLetterPage> {
    const offset = Math.max(0, page.offset ?? 0);
    const limit = Math.min(500, Math.max(1, page.limit ?? 50));
    if (!filter.reason && !filter.reasonIncludes) {
      const ids = (await this.#ids(filter)).reverse();
      const entries = await this.#load(ids.slice(offset, offset + limit));
      return { total: ids.length, offset, limit, entries: entries.map(summarize) };
    }
    const all = (await this.#matching(filter)).reverse();
    // Only the page is read in full; an entry removed since the ids were read is left out.
    const entries = await this.#load(all.slice(offset, offset + limit).map((m) => m.id));
    return { total: all.length, offset, limit, entries: entries.map(summarize) };
  }

  async get(id: string): Promise<DeadLetterEntry | null> {
    const job = await this.#queue.getJob(id);
    return job?.id ? toEntry(job) : null;
  }

  /** Entries per category (and in total), for one shop or all. */
  async countByReason(shop?: string): Promise<{ total: number; byReason: Record<string, number> }> {
    const entries = await this.#matching({ shop });
    const byReason: Record<string, number> = {};
    for (const { row } of entries) byReason[row.category] = (byReason[row.category] ?? 0) + 1;
    return { total: entries.length, byReason };
  }

  /**
   * Re-queues one entry. Orders: a sync job with trigger `dlq-retry` (priority `live` unless
   * told otherwise) that reconciles from the latest snapshot; when none is stored, the order is
   * refetched from Shopify first if a refetch is wired, else the entry stays and says why.
   * Payload entries: the stored body goes through the receiver again.
   */
  async retry(
    id: string,
    options: { priority?: SyncPriority; quiet?: boolean } = {},
  ): Promise<RetryOutcome> {
    const token = await this.#lock.acquire(id);
    if (!token) {
      return { id, result: "skipped", message: "another retry of this entry is in progress" };
    }
    try {
      const job = await this.#queue.getJob(id);
      if (!job?.id) {
        return {
          id,
          result: "skipped",
          message: "not in the dead-letter queue (already retried or discarded)",
        };
      }
      const outcome =
        job.data.orderId === null
          ? await this.#retryPayload(job)
          : await this.#retryOrder(job, job.data.orderId, options.priority ?? "live");
      // One line per entry for a single retry; a bulk retry's are at debug, and it says its counts.
      this.#deps.logger[options.quiet ? "debug" : "info"](
        {
          deadLetterId: id,
          shop: job.data.shop,
          orderId: job.data.orderId,
          result: outcome.result,
        },
        "dead letter retry",
      );
      return outcome;
    } catch (error) {
      const message = `could not re-queue: ${errorText(error)}`;
      this.#deps.logger.warn({ deadLetterId: id, err: { message } }, "dead letter retry failed");
      return { id, result: "failed", message };
    } finally {
      await this.#lock.release(id, token);
    }
  }

  async #retryOrder(
    job: Job<DeadLetterData>,
    orderId: string,
    priority: SyncPriority,
  ): Promise<RetryOutcome> {
    const id = job.id as string;
    const { shop } = job.data;
    const shopRecord = await this.#deps.shops.getShop(shop);
    const blocked = !shopRecord
      ? `the shop ${shop} is not registered`
      : shopRecord.status === "uninstalled"
        ? `the shop ${shop} uninstalled the app`
        : shopRecord.status === "paused"
          ? `sync is paused for ${shop} (${shopRecord.pausedReason ?? "no reason given"}); resume the shop first`
          : null;
    if (blocked || !shopRecord) return this.#keep(job, blocked ?? "shop missing");

    const snapshot = await this.#deps.snapshots.get(shop, orderId);
    if (!snapshot?.order) {
      const fresh = this.#deps.refetchOrder
        ? await this.#deps.refetchOrder(shopRecord, orderId)
        : null;
      if (!fresh) {
        return this.#keep(
          job,
          this.#deps.refetchOrder
            ? "no stored state of this order, and Shopify did not return it (is the shop connected with an access token? does the order still exist?)"
            : "no stored state of this order (snapshots expire after 14 days) and no Shopify refetch is configured; resync the order from Shopify",
        );
      }
      await this.#deps.snapshots.storeOrder(fresh);
    }

    // The history waits for the order in case the retry fails again (see recordDeadLetter).
    const retired: DeadLetterData = { ...job.data, retries: (job.data.retries ?? 0) + 1 };
    await this.#deps.redis.set(
      retiredKey(this.#deps.prefix, id),
      JSON.stringify(retired),
      "PX",
      RETIRED_TTL_MS,
    );
    const queued = await this.#deps.queues.enqueueSync({
      shop,
      orderId,
      priority,
      trigger: "dlq-retry",
      receivedAt: Date.now(),
    });
    await this.#remove(job);
    return {
      id,
      result: "queued",
      message: `sync job ${queued.id ?? "?"} queued; it reconciles the order's latest state`,
    };
  }

  async #retryPayload(job: Job<DeadLetterData>): Promise<RetryOutcome> {
    const id = job.id as string;
    const { shop, topic, rawPayload, webhookId } = job.data;
    if (!rawPayload || !topic) return this.#keep(job, "no stored webhook body to re-ingest");
    if (!this.#deps.reingest) return this.#keep(job, "re-ingesting payloads is not wired here");
    // Checked first: a body that still cannot be used stays as it is, with the reason.
    try {
      normalizeWebhook(topic, shop as ShopDomain, parseShopifyJson(rawPayload));
    } catch (error) {
      return this.#keep(job, `the body still cannot be used: ${(error as Error).message}`);
    }
    const outcome = await this.#deps.reingest({
      shop: shop as ShopDomain,
      topic,
      webhookId: webhookId ?? id,
      eventId: null,
      triggeredAt: null,
      rawBody: rawPayload,
    });
    await this.#remove(job);
    return { id, result: "reingested", message: `webhook re-ingested: ${outcome}` };
  }

  /** The entry leaves the index, then the queue (see DeadLetterIndex). */
  async #remove(job: Job<DeadLetterData>): Promise<void> {
    await this.#index.forget([job.id as string]);
    await job.remove();
  }

  /**
   * The entry stays; it records what the retry found, so the next look at it says why. Its row
   * in the index holds nothing this changes (shop, category, reason).
   */
  async #keep(job: Job<DeadLetterData>, why: string): Promise<RetryOutcome> {
    await job.updateData({ ...job.data, lastRetry: { at: new Date().toISOString(), result: why } });
    return { id: job.id as string, result: "skipped", message: why };
  }

  /** The ids of every entry matching the filter, oldest first (what a bulk retry goes through). */
  async matchingIds(filter: DeadLetterFilter): Promise<string[]> {
    return (await this.#matching(filter)).map((e) => e.id);
  }

  /**
   * Retries the given entries at once (a bulk retry's chunk of BULK_CONCURRENCY), each under its
   * lock, at bulk priority unless told otherwise; their lines are at debug.
   */
  retryEach(ids: string[], options: { priority?: SyncPriority } = {}): Promise<RetryOutcome[]> {
    return Promise.all(
      ids.map((id) => this.retry(id, { priority: options.priority ?? "bulk", quiet: true })),
    );
  }

  /**
   * Retries every entry matching the filter. The ids are read once, so entries added while it
   * runs wait for the next run; each entry is retried under its lock, so a second run (at once
   * or later) skips what the first one queued. Nothing is removed unless its job was queued.
   */
  async retryMatching(
    filter: DeadLetterFilter,
    options: {
      priority?: SyncPriority;
      /** Called after each chunk of entries with how many are done, and the counts so far. */
      onProgress?: (progress: BulkRetryProgress) => void;
    } = {},
  ): Promise<BulkRetryReport> {
    const entries = await this.#matching(filter);
    const where = {
      ...(filter.shop ? { shop: filter.shop } : {}),
      ...(filter.reason ? { reason: filter.reason } : {}),
    };
    const log = this.#deps.logger;
    if (entries.length > 0)
      log.info({ ...where, matched: entries.length }, "dead letter bulk retry");
    const outcomes: RetryOutcome[] = [];
    const counts = { retried: 0, skipped: 0, failed: 0 };
    for (let i = 0; i < entries.length; i += BULK_CONCURRENCY) {
      const chunk = entries.slice(i, i + BULK_CONCURRENCY).map((e) => e.id);
      const done = await this.retryEach(chunk, options);
      for (const o of done) {
        outcomes.push(o);
        if (o.result === "queued" || o.result === "reingested") counts.retried++;
        else counts[o.result]++;
      }
      options.onProgress?.({ done: outcomes.length, matched: entries.length, ...counts });
    }
    const report = { matched: entries.length, ...counts, outcomes };
    if (entries.length > 0)
      log.info({ ...where, matched: entries.length, ...counts }, "dead letter bulk retry done");
    return report;
  }

  /**
   * Removes an entry for good (and any history waiting for it). The order's failure record says
   * so, so the entry is not restored after Redis loses its data (ops/dead-letter-restore.ts).
   */
  async discard(id: string): Promise<"discarded" | "not-found" | "busy"> {
    const token = await this.#lock.acquire(id);
    if (!token) return "busy";
    try {
      const job = await this.#queue.getJob(id);
      if (!job?.id) return "not-found";
      // Recorded first: a removal that fails leaves the entry listed, to be discarded again.
      if (job.data.orderId !== null) {
        await this.#deps.links.markDiscarded(job.data.shop, job.data.orderId);
      }
      await this.#remove(job);
      await this.#deps.redis.del(retiredKey(this.#deps.prefix, id));
      this.#deps.logger.info(
        { deadLetterId: id, shop: job.data.shop, orderId: job.data.orderId },
        "dead letter discarded",
      );
      return "discarded";
    } finally {
      await this.#lock.release(id, token);
    }
  }
}

function toEntry(job: Job<DeadLetterData>): DeadLetterEntry {
  return {
    id: job.id as string,
    kind: job.data.orderId === null ? "payload" : "order",
    ...job.data,
  };
}

function summarize(entry: DeadLetterEntry): DeadLetterSummary {
  const { request: _request, response, rawPayload: _raw, ...rest } = entry;
  return { ...rest, ...(response?.status !== undefined ? { status: response.status } : {}) };
}
