import { DelayedError, type Job, UnrecoverableError } from "bullmq";
import type { Logger } from "pino";
import type { SnapshotStore } from "../queue/snapshot-store.ts";
import type { SyncQueues } from "../queue/sync-queue.ts";
import {
  type AdminClientFactory,
  OrderSource,
  ShopNotConnectedError,
  updatedWindowQuery,
} from "../shopify/index.ts";
import type { ShopRepository } from "../store/index.ts";
import type { ShopDomain } from "../sync/source-order.ts";
import { sixtyDayWarning } from "./backfill-progress.ts";
import type { BackfillJobData } from "./backfill-queue.ts";
import type { BackfillRepository } from "./backfill-repository.ts";
import { FeedAbortedError, OrderFeeder } from "./order-feeder.ts";
import { nextPage } from "./windowed-pager.ts";

export interface BackfillProcessorDeps {
  backfills: BackfillRepository;
  shops: ShopRepository;
  shopifyAdmin: AdminClientFactory;
  snapshots: SnapshotStore;
  queues: SyncQueues;
  logger: Logger;
  /** Bulk sync jobs a backfill may have waiting at once (see OrderFeeder). */
  maxBacklog?: number;
}

export type BackfillResult =
  | { outcome: "completed"; done: number }
  | { outcome: "skipped"; reason: string };

/**
 * The backfill job: walks the shop's orders (oldest update first, in windows under Shopify's
 * 25,000-object pagination cap) through the cost-throttled Admin client, feeds each order to
 * the sync queue no faster than the provider budget drains it, and saves the cursor after every
 * page. Stopped (worker shutdown), it puts itself back in the queue and resumes from the cursor.
 */
export function createBackfillProcessor(deps: BackfillProcessorDeps) {
  return async function processBackfill(
    job: Job<BackfillJobData>,
    token?: string,
    signal?: AbortSignal,
  ): Promise<BackfillResult> {
    const { backfillId, shop } = job.data;
    const log = deps.logger.child({ shop, backfillId, jobId: job.id });
    const backfill = deps.backfills.get(backfillId);
    if (!backfill || backfill.status === "completed")
      return { outcome: "skipped", reason: backfill ? "already completed" : "unknown backfill" };
    const shopRecord = deps.shops.getShop(shop);
    if (!shopRecord || shopRecord.status === "uninstalled") {
      deps.backfills.fail(backfillId, "the shop is not installed");
      return { outcome: "skipped", reason: "shop not installed" };
    }

    try {
      const source = new OrderSource(deps.shopifyAdmin.for(shopRecord), shop as ShopDomain);
      if (backfill.total === null) {
        const total = await source.count(updatedWindowQuery(backfill.since, backfill.until));
        deps.backfills.setTotal(backfillId, total);
        backfill.total = total;
        const warning = sixtyDayWarning(shopRecord.scopes, backfill.since);
        if (warning) log.warn({ warning }, "backfill limited to recent orders");
        log.info({ total }, "backfill started");
      }
      const feeder = new OrderFeeder(deps, {
        shop,
        trigger: "backfill",
        ...(deps.maxBacklog ? { maxBacklog: deps.maxBacklog } : {}),
        ...(signal ? { signal } : {}),
      });
      let cursor = backfill.cursor;
      let done = backfill.done;
      for (;;) {
        if (signal?.aborted) throw new FeedAbortedError("stopped");
        const page = await nextPage(source, cursor, backfill.until);
        for (const order of page.orders) await feeder.feed(order);
        done += page.orders.length;
        if (!page.next) break;
        cursor = page.next;
        deps.backfills.saveProgress(backfillId, cursor, done);
        await job.updateProgress({ done, total: backfill.total });
      }
      deps.backfills.complete(backfillId, done);
      await job.updateProgress({ done, total: backfill.total });
      log.info({ done }, "backfill completed");
      return { outcome: "completed", done };
    } catch (error) {
      if (error instanceof FeedAbortedError) {
        // A shutdown: back to the queue at once; the next worker resumes from the saved cursor.
        log.info("backfill stopped; it resumes from its cursor");
        await job.moveToDelayed(Date.now() + 250, token);
        throw new DelayedError();
      }
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof ShopNotConnectedError) {
        deps.backfills.fail(backfillId, message);
        throw new UnrecoverableError(message);
      }
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1))
        deps.backfills.fail(backfillId, message);
      log.warn({ err: { name: (error as Error).name, message } }, "backfill page failed; retrying");
      throw error;
    }
  };
}
