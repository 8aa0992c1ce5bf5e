import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { SyncJobData } from "./jobs.ts";
import type { StoreRateLimiter } from "./limiter/index.ts";
import type { SyncQueues } from "./sync-queue.ts";

export interface BudgetFeederDeps {
  limiter: StoreRateLimiter;
  queues: SyncQueues;
}

export type FeedItem = Omit<SyncJobData, "prepaidSlot" | "priority">;

/**
 * Queues bulk work (backfill, resync) for one store only as fast as the provider budget lets it
 * leave. Before each job the feeder takes a bulk slot from the store's limiter — waiting, when
 * there is none, exactly until its own slot frees (live work still goes first: live waiters are
 * ahead of the feeder) — and hands the slot to the job. So the sync queue never holds thousands
 * of delayed jobs for one store, other stores' jobs never queue behind them, and a backfill job
 * is moved at most when a 429 blocks the store.
 *
 * Slow start: while no response has told the limiter what the store's budget is (another client
 * may already be spending it), the feeder queues one job and waits for its answer before it
 * fills the window; a blind burst into a shared budget would meet a 429 and block the store,
 * live orders included, for a whole Retry-After.
 *
 * A slot the job does not use (the order was already in sync, or the job was absorbed by one
 * already queued for the order) is given back or expires with the window; a job whose slot
 * expired before it ran asks the limiter again.
 */
export async function feedAtBudget(
  deps: BudgetFeederDeps,
  storeId: number,
  items: AsyncIterable<FeedItem> | Iterable<FeedItem>,
  options: { signal?: AbortSignal; learnTimeoutMs?: number } = {},
): Promise<number> {
  const waiter = `feeder:${randomUUID()}`;
  let fed = 0;
  let learned = await deps.limiter.knows(storeId);
  for await (const item of items) {
    if (!learned && fed === 1) {
      learned = await waitToLearn(deps.limiter, storeId, options.learnTimeoutMs ?? 5_000, options);
    }
    for (;;) {
      options.signal?.throwIfAborted();
      const decision = await deps.limiter.acquire(storeId, "bulk", waiter);
      if (decision.granted) {
        const job = await deps.queues.enqueueSync({
          ...item,
          priority: "bulk",
          prepaidSlot: decision.slotId,
        });
        // Absorbed into a job already queued for this order (BullMQ then answers with that job's
        // id): that job brings its own budget, so the slot goes back.
        const stored = job.id ? await deps.queues.sync.getJob(job.id) : undefined;
        if (stored?.data.prepaidSlot !== decision.slotId) {
          await deps.limiter.release(storeId, decision.slotId);
        }
        fed++;
        break;
      }
      await sleep(Math.max(1, decision.waitMs), undefined, options);
    }
  }
  return fed;
}

/**
 * Waits until a response from the store reached the limiter, or gives up after `timeoutMs` (the
 * first job may have had nothing to send). Polls, briefly: it runs once per feed, at its start.
 */
async function waitToLearn(
  limiter: StoreRateLimiter,
  storeId: number,
  timeoutMs: number,
  options: { signal?: AbortSignal },
): Promise<true> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !(await limiter.knows(storeId))) {
    await sleep(10, undefined, options);
  }
  return true;
}
