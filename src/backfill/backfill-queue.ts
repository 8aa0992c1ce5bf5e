import { Queue } from "bullmq";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import type { BackfillRecord, BackfillRepository } from "./backfill-repository.ts";

export interface BackfillJobData {
  backfillId: number;
  shop: string;
}

export const backfillJobId = (id: number) => `backfill-${id}`;

/**
 * The backfill queue: one job per backfill, which walks the shop's orders page by page. A
 * shop has at most one unfinished backfill; asking again returns it.
 */
export class BackfillQueue {
  readonly queue: Queue<BackfillJobData>;

  constructor(
    connection: RedisConnection,
    prefix: string,
    private readonly repo: BackfillRepository,
  ) {
    this.queue = new Queue<BackfillJobData>(QUEUE.backfill, queueOptions(connection, prefix));
    onQueueErrors(this.queue);
  }

  async start(
    shop: string,
    options: { since?: string | null } = {},
  ): Promise<{ backfill: BackfillRecord; started: boolean }> {
    const active = await this.repo.active(shop);
    if (active) {
      await this.#ensureJob(active);
      return { backfill: active, started: false };
    }
    // Orders updated after this moment reach the connector by webhook; the walk stops here.
    const backfill = await this.repo.create({
      shop,
      since: options.since ?? null,
      until: new Date().toISOString(),
    });
    await this.#ensureJob(backfill);
    return { backfill, started: true };
  }

  async #ensureJob(backfill: BackfillRecord) {
    const id = backfillJobId(backfill.id);
    const state = await this.queue.getJobState(id);
    if (state !== "unknown" && state !== "completed" && state !== "failed") return;
    if (state !== "unknown") await this.queue.remove(id);
    if (backfill.status === "paused" || backfill.status === "failed")
      await this.repo.setStatus(backfill.id, "running");
    await this.queue.add(
      "backfill",
      { backfillId: backfill.id, shop: backfill.shop },
      {
        jobId: id,
        attempts: 8,
        backoff: { type: "exponential", delay: 5_000 },
        removeOnComplete: { age: 7 * 86_400 },
        removeOnFail: { age: 30 * 86_400 },
      },
    );
  }

  close() {
    return this.queue.close();
  }
}
