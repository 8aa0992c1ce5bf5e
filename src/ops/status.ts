import { type JobType, Queue } from "bullmq";
import type { BackfillRecord, BackfillRepository } from "../backfill/index.ts";
import type { LimiterInspection, StoreRateLimiter } from "../engine/limiter/index.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import type { LinkRepository } from "../store/index.ts";
import { createDeadLetters, type DeadLetterOpsDeps } from "./dead-letters.ts";

/** What the status report reads: the queues, the stores and the limiter (read-only). */
export interface StatusDeps extends DeadLetterOpsDeps {
  links: LinkRepository;
  backfills: BackfillRepository;
  limiter: StoreRateLimiter;
}

/** How many pending jobs per state are read to find the oldest (the rest is counted only). */
const OLDEST_SCAN = 1_000;
const PENDING = ["waiting", "prioritized", "delayed"] as const;

export interface QueueStatus {
  name: string;
  counts: Record<string, number>;
  /** Age of the oldest job waiting to run (waiting, prioritized or delayed), ms; null if none. */
  oldestPendingAgeMs: number | null;
  /** True when more jobs wait than were read to find the oldest. */
  oldestIsApproximate: boolean;
}

export interface ShopStatusLine {
  shop: string;
  status: string;
  pausedReason: string | null;
  /** Why the last webhook subscription check failed, when it did. */
  subscriptionsError: string | null;
  storeId: number | null;
  limiter: LimiterInspection | null;
  orders: { synced: number; failed: number; deadLettered: number };
  /** When an order of the shop last reached the provider (order_links.last_synced_at). */
  lastSyncedAt: string | null;
}

export interface BackfillStatus {
  id: number;
  shop: string;
  status: string;
  done: number;
  total: number | null;
  percent: number | null;
  since: string | null;
  startedAt: string;
  updatedAt: string;
  completedAt: string | null;
  /** Seconds left at the average pace up to the last update (running backfills with a total). */
  etaSeconds: number | null;
  error: string | null;
}

export interface ConnectorStatus {
  generatedAt: string;
  queues: QueueStatus[];
  shops: ShopStatusLine[];
  deadLetters: { total: number; byReason: Record<string, number> };
  backfills: BackfillStatus[];
}

const COUNTED: JobType[] = [
  "waiting",
  "prioritized",
  "active",
  "delayed",
  "failed",
  "waiting-children",
];

/**
 * One queue's counts and oldest pending job. A sync shard has no `completed` count: its jobs are
 * removed as they finish (SYNC_JOB_OPTIONS), and the orders synced are counted per shop from the
 * database (`shops[].orders.synced`). A queue whose jobs are only ever added to its waiting list
 * (`addedInOrder`: the dead-letter queue, which no worker takes from) has its oldest first there,
 * so one job is read, not OLDEST_SCAN of them with their bodies.
 */
async function queueStatus(
  queue: Queue,
  keepsCompleted: boolean,
  addedInOrder = false,
): Promise<QueueStatus> {
  const states: JobType[] = keepsCompleted ? [...COUNTED, "completed"] : COUNTED;
  const counts = await queue.getJobCounts(...states);
  const now = Date.now();
  let oldest: number | null = null;
  let approximate = false;
  const scan = addedInOrder ? 1 : OLDEST_SCAN;
  for (const state of PENDING) {
    if ((counts[state] ?? 0) === 0) continue;
    if (!addedInOrder && (counts[state] ?? 0) > OLDEST_SCAN) approximate = true;
    // The ids, then each job once: BullMQ's getJobs reads each job twice (its script returns
    // the data, then it loads every job again).
    const ids = await queue.getRanges([state], 0, scan - 1, true);
    const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
    for (const job of jobs) {
      if (job?.timestamp && (oldest === null || job.timestamp < oldest)) oldest = job.timestamp;
    }
  }
  return {
    name: queue.name,
    counts,
    oldestPendingAgeMs: oldest === null ? null : Math.max(0, now - oldest),
    oldestIsApproximate: approximate,
  };
}

function backfillStatus(row: BackfillRecord): BackfillStatus {
  const percent = row.total ? Math.min(100, Math.round((row.done / row.total) * 1000) / 10) : null;
  let etaSeconds: number | null = null;
  if (row.status === "running" && row.total && row.done > 0) {
    // The pace up to the last progress update; time since then says nothing about the pace.
    const elapsed = Math.max(1, Date.parse(row.updatedAt) - Date.parse(row.startedAt));
    etaSeconds = Math.round(((row.total - row.done) * elapsed) / row.done / 1000);
  }
  return {
    id: row.id,
    shop: row.shop,
    status: row.status,
    done: row.done,
    total: row.total,
    percent,
    since: row.since,
    startedAt: row.startedAt,
    updatedAt: row.updatedAt,
    completedAt: row.completedAt,
    etaSeconds,
    error: row.error,
  };
}

/**
 * What an operator wants at a glance, for `connector status` and GET /admin/api/status: every
 * queue's depth (each sync shard its own row) and oldest pending job, each shop's provider budget (read without touching
 * it), orders synced and failed, last successful sync, dead letters by reason, backfills.
 */
export async function collectStatus(
  ctx: StatusDeps,
  filter: { shop?: string | undefined } = {},
): Promise<ConnectorStatus> {
  const extra = Object.values(QUEUE)
    .filter((name) => name !== QUEUE.sync && name !== QUEUE.deadLetter)
    .map((name) => {
      const queue = new Queue(name, queueOptions(ctx.redis, ctx.prefix));
      onQueueErrors(queue);
      return queue;
    });
  try {
    // The sync queue as each of its shards (and those of an older shard count still draining).
    const sync = await ctx.queues.allSyncQueues();
    const queues = await Promise.all([
      ...sync.map((q) => queueStatus(q as Queue, false)),
      queueStatus(ctx.queues.deadLetter as Queue, true, true),
      ...extra.map((q) => queueStatus(q, true)),
    ]);
    const shopRecords = (await ctx.shops.listShops()).filter(
      (s) => !filter.shop || s.shop === filter.shop,
    );
    const lastSynced = await ctx.links.lastSyncedAtByShop();
    const shops = await Promise.all(
      shopRecords.map(async (s) => ({
        shop: s.shop,
        status: s.status,
        pausedReason: s.pausedReason,
        subscriptionsError: s.subscriptionsError,
        storeId: s.storeId,
        limiter: s.storeId === null ? null : await ctx.limiter.inspect(s.storeId),
        orders: await ctx.links.countByResult(s.shop),
        lastSyncedAt: lastSynced.get(s.shop) ?? null,
      })),
    );
    const deadLetters = await createDeadLetters(ctx).countByReason(filter.shop);
    // Every running or paused backfill, and the latest one of each shop.
    const rows = await ctx.backfills.newestFirst(filter.shop);
    const seen = new Set<string>();
    const now = Date.now();
    const backfills = rows
      .filter((r) => {
        const latest = !seen.has(r.shop);
        seen.add(r.shop);
        return latest || r.status === "running" || r.status === "paused";
      })
      .map(backfillStatus);
    return { generatedAt: new Date(now).toISOString(), queues, shops, deadLetters, backfills };
  } finally {
    await Promise.all(extra.map((q) => q.close()));
  }
}
