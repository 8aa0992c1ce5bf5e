import { Queue } from "bullmq";
import { withLock } from "../lib/lock.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { freeJobId, runsNothing } from "../queue/fixed-id-job.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import type { BackfillRecord, BackfillRepository } from "./backfill-repository.ts";

export interface BackfillJobData {
  backfillId: number;
  shop: string;
}

/** The orders a backfill walks, by `updated_at`: from `since` (or the first), to `until` (or now). */
export interface BackfillWindow {
  since?: string | null;
  /** An ISO instant; one past the start of the backfill is read as its start. */
  until?: string;
}

export const backfillJobId = (id: number) => `backfill-${id}`;
/** The job name of a backfill on its queue. */
export const BACKFILL_JOB = "backfill";

/** How long one start may hold a shop's start lock, and how long another waits for it. */
const START_LOCK_MS = 30_000;
const START_LOCK_WAIT_MS = START_LOCK_MS + 5_000;

/**
 * The backfill queue: one job per backfill, which walks the shop's orders page by page. A
 * shop has at most one unfinished backfill; asking again returns it.
 */
export class BackfillQueue {
  readonly queue: Queue<BackfillJobData>;
  readonly #redis: RedisConnection;
  readonly #prefix: string;

  constructor(
    connection: RedisConnection,
    prefix: string,
    private readonly repo: BackfillRepository,
  ) {
    this.queue = new Queue<BackfillJobData>(QUEUE.backfill, queueOptions(connection, prefix));
    this.#redis = connection;
    this.#prefix = prefix;
    onQueueErrors(this.queue);
  }

  /**
   * Starts the shop's backfill, or answers its unfinished one. Starts of one shop run one at a
   * time across processes (the settings page, the CLI, the admin API and an install may ask at
   * once): between the look for an unfinished backfill and the new one's row, another start
   * would find none too, and the shop would get two backfills walking the same orders.
   */
  start(
    shop: string,
    options: BackfillWindow = {},
  ): Promise<{ backfill: BackfillRecord; started: boolean }> {
    return withLock(
      this.#redis,
      `${this.#prefix}:backfill:start-lock:{${shop}}`,
      {
        ttlMs: START_LOCK_MS,
        waitMs: START_LOCK_WAIT_MS,
        busy: () =>
          new Error(`another start of ${shop}'s backfill is still running; try again in a minute`),
      },
      () => this.#start(shop, options),
    );
  }

  /**
   * The shop's running backfill keeps a job: one that Redis lost (a restart without
   * persistence), or that ended without finishing the backfill (its worker killed more often
   * than BullMQ allows), is queued again, and walks on from the cursor its row keeps. Answers
   * the backfill when its job had to be queued again, else null. Each sweep of the shop runs it.
   */
  async keepQueued(shop: string): Promise<BackfillRecord | null> {
    const running = await this.repo.active(shop);
    if (running?.status !== "running") return null;
    if (!runsNothing(await this.queue.getJobState(backfillJobId(running.id)))) return null;
    // Under the start's lock: a start that created the row but not yet its job finishes first.
    const { backfill } = await this.start(shop);
    return backfill;
  }

  /**
   * The shop has a token Shopify accepts again (a reinstall, the merchant reopening the app, a
   * new token from `shops add`): its paused backfill goes on from its cursor. Answers it, or
   * null when the shop has none paused.
   */
  async resumePaused(shop: string): Promise<BackfillRecord | null> {
    const waiting = await this.repo.active(shop);
    if (waiting?.status !== "paused") return null;
    return (await this.start(shop)).backfill;
  }

  async #start(
    shop: string,
    options: BackfillWindow,
  ): Promise<{ backfill: BackfillRecord; started: boolean }> {
    const active = await this.repo.active(shop);
    if (active) {
      await this.#ensureJob(active);
      return { backfill: active, started: false };
    }
    // Orders updated after this moment reach the connector by webhook; the walk stops here, or
    // at the end asked for when that comes first.
    const now = new Date().toISOString();
    const backfill = await this.repo.create({
      shop,
      since: options.since ?? null,
      until: options.until !== undefined && options.until < now ? options.until : now,
    });
    await this.#ensureJob(backfill);
    return { backfill, started: true };
  }

  async #ensureJob(backfill: BackfillRecord) {
    const id = backfillJobId(backfill.id);
    if ((await freeJobId(this.queue, id)) === null) return;
    if (backfill.status === "paused" || backfill.status === "failed")
      await this.repo.setStatus(backfill.id, "running");
    await this.queue.add(
      BACKFILL_JOB,
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
