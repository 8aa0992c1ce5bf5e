import type { SnapshotStore } from "../queue/snapshot-store.ts";
import type { SyncQueues } from "../queue/sync-queue.ts";
import type { SourceOrder } from "../sync/source-order.ts";

export interface OrderFeederOptions {
  shop: string;
  /** What asked for the sync: "resync", "backfill", "sweep". */
  trigger: string;
  /**
   * Jobs of this feeder that may wait in the sync queue at once. The backlog drains at the
   * provider's pace (the per-store limiter), so a small bound feeds the queue only as fast as
   * the provider budget allows, and live webhooks never queue behind thousands of bulk jobs.
   */
  maxBacklog?: number;
  pollMs?: number;
  signal?: AbortSignal;
}

export class FeedAbortedError extends Error {
  override name = "FeedAbortedError";
}

const FINISHED = new Set(["completed", "failed", "unknown"]);

/**
 * Hands orders read from the Admin API to the sync pipeline: the snapshot is stored only when
 * newer than the one kept (a webhook may have brought a fresher state), and a reconcile job is
 * queued at bulk priority. The worker then sends only what the provider lacks.
 */
export class OrderFeeder {
  readonly #pending = new Set<string>();
  readonly #options: Required<Omit<OrderFeederOptions, "signal">> & { signal?: AbortSignal };
  stored = 0;
  queued = 0;

  constructor(
    private readonly deps: { snapshots: SnapshotStore; queues: SyncQueues },
    options: OrderFeederOptions,
  ) {
    this.#options = { maxBacklog: 20, pollMs: 100, ...options };
  }

  async feed(order: SourceOrder): Promise<void> {
    await this.#waitForRoom();
    if (await this.deps.snapshots.putOrder(order)) this.stored++;
    const job = await this.deps.queues.enqueueSync({
      shop: this.#options.shop,
      orderId: order.id,
      priority: "bulk",
      trigger: this.#options.trigger,
      receivedAt: Date.now(),
    });
    this.queued++;
    if (job.id) this.#pending.add(job.id);
  }

  /** Waits until every job this feeder queued has finished (completed or failed). */
  async settle(): Promise<void> {
    while (await this.#prune()) await this.#sleep();
  }

  /** Jobs of this feeder still waiting, delayed or running. */
  get backlog(): number {
    return this.#pending.size;
  }

  async #waitForRoom() {
    while (this.#pending.size >= this.#options.maxBacklog) {
      if ((await this.#prune()) < this.#options.maxBacklog) return;
      await this.#sleep();
    }
  }

  async #prune(): Promise<number> {
    for (const id of [...this.#pending]) {
      const state = await this.deps.queues.sync.getJobState(id);
      if (FINISHED.has(state)) this.#pending.delete(id);
    }
    return this.#pending.size;
  }

  #sleep() {
    const { signal, pollMs } = this.#options;
    if (signal?.aborted) return Promise.reject(new FeedAbortedError("feeding was stopped"));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, pollMs);
      const onAbort = () => {
        clearTimeout(timer);
        reject(new FeedAbortedError("feeding was stopped"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
