import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { SyncJobData } from "../queue/jobs.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import type { StoreRateLimiter } from "./limiter/index.ts";

export interface BudgetFeederDeps {
  limiter: StoreRateLimiter;
  queues: OrderQueues;
}

export type FeedItem = Omit<SyncJobData, "prepaidSlot" | "priority">;

/**
 * Queues bulk work (backfill, resync, sweep) for one store only as fast as the provider budget
 * lets it leave. Before each job the gate takes a bulk slot from the store's limiter — waiting,
 * when there is none, exactly until its own slot frees (live work still goes first: live waiters
 * are ahead of the gate) — and hands the slot to the job (`prepaidSlot`). So the sync queue
 * never holds thousands of delayed jobs for one store, other stores' jobs never queue behind
 * them, and a bulk job is moved at most when a 429 blocks the store.
 *
 * Slow start: while no response has told the limiter what the store's budget is (another client
 * may already be spending it), the gate lets one job through and waits for its answer before it
 * fills the window; a blind burst into a shared budget would meet a 429 and block the store,
 * live orders included, for a whole Retry-After.
 *
 * A slot the job does not use (the order was already in sync, or the job was absorbed by one
 * already queued for the order) is given back or expires with the window; a job whose slot
 * expired before it ran asks the limiter again.
 */
export class BudgetGate {
  readonly #waiter = `feeder:${randomUUID()}`;
  #passed = 0;
  #learned: boolean | undefined;

  constructor(
    private readonly deps: BudgetFeederDeps,
    private readonly storeId: number,
    private readonly options: { signal?: AbortSignal; learnTimeoutMs?: number } = {},
  ) {}

  /** Queues one bulk sync job holding its own slot; resolves once it is queued. */
  async enqueue(item: FeedItem) {
    const { limiter, queues } = this.deps;
    const slotId = await this.#takeSlot();
    const job = await queues.enqueueSync({ ...item, priority: "bulk", prepaidSlot: slotId });
    // Absorbed into a job already queued for this order (BullMQ then answers with that job's
    // id): that job brings its own budget, so the slot goes back.
    // Read from the shard the job went to (SYNC_QUEUE_SHARDS).
    const stored = job.id ? await queues.syncQueueNamed(job.queueName)?.getJob(job.id) : undefined;
    if (stored?.data.prepaidSlot !== slotId) await limiter.release(this.storeId, slotId);
    this.#passed++;
    return job;
  }

  async #takeSlot(): Promise<string> {
    const { limiter } = this.deps;
    const { signal } = this.options;
    this.#learned ??= await limiter.knows(this.storeId);
    if (!this.#learned && this.#passed >= 1) {
      await this.#waitToLearn();
      this.#learned = true;
    }
    for (;;) {
      signal?.throwIfAborted();
      const decision = await limiter.acquire(this.storeId, "bulk", this.#waiter);
      if (decision.granted) return decision.slotId;
      await sleep(Math.max(1, decision.waitMs), undefined, signal ? { signal } : {});
    }
  }

  /**
   * Waits until a response from the store reached the limiter, or gives up after the timeout
   * (the first job may have had nothing to send). Polls, briefly: once per gate, at its start.
   */
  async #waitToLearn() {
    const { signal, learnTimeoutMs = 5_000 } = this.options;
    const deadline = Date.now() + learnTimeoutMs;
    while (Date.now() < deadline && !(await this.deps.limiter.knows(this.storeId))) {
      await sleep(10, undefined, signal ? { signal } : {});
    }
  }
}

/** Feeds every item through one gate; resolves with how many were queued. */
export async function feedAtBudget(
  deps: BudgetFeederDeps,
  storeId: number,
  items: AsyncIterable<FeedItem> | Iterable<FeedItem>,
  options: { signal?: AbortSignal; learnTimeoutMs?: number } = {},
): Promise<number> {
  const gate = new BudgetGate(deps, storeId, options);
  let fed = 0;
  for await (const item of items) {
    await gate.enqueue(item);
    fed++;
  }
  return fed;
}
