import { DelayedError, type Job, UnrecoverableError } from "bullmq";
import type { Logger } from "pino";
import { ShopifyTokenError } from "../shopify/admin-client.ts";
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
import { feedOrders, type OrderFeederDeps, ShopNotConfiguredError } from "./order-feeder.ts";
import { nextPage } from "./windowed-pager.ts";

export interface BackfillProcessorDeps extends OrderFeederDeps {
  backfills: BackfillRepository;
  shops: ShopRepository;
  shopifyAdmin: AdminClientFactory;
  logger: Logger;
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
    const backfill = await deps.backfills.get(backfillId);
    if (!backfill || backfill.status === "completed")
      return { outcome: "skipped", reason: backfill ? "already completed" : "unknown backfill" };
    const shopRecord = await deps.shops.getShop(shop);
    if (!shopRecord || shopRecord.status === "uninstalled") {
      await deps.backfills.fail(backfillId, "the shop is not installed");
      return { outcome: "skipped", reason: "shop not installed" };
    }

    try {
      const source = new OrderSource(deps.shopifyAdmin.for(shopRecord), shop as ShopDomain);
      if (backfill.total === null) {
        const total = await source.count(updatedWindowQuery(backfill.since, backfill.until));
        await deps.backfills.setTotal(backfillId, total);
        backfill.total = total;
        const warning = sixtyDayWarning(shopRecord.scopes, backfill.since);
        if (warning) log.warn({ warning }, "backfill limited to recent orders");
        log.info({ total }, "backfill started");
      }
      const { total, until } = backfill;
      let cursor = backfill.cursor;
      let done = backfill.done;
      // Pages are read as the feeder takes their orders, i.e. as the provider budget frees;
      // the cursor is saved once every order of a page is queued.
      async function* orders() {
        for (;;) {
          const page = await nextPage(source, cursor, until);
          yield* page.orders;
          done += page.orders.length;
          if (!page.next) return;
          cursor = page.next;
          await deps.backfills.saveProgress(backfillId, cursor, done);
          await job.updateProgress({ done, total });
        }
      }
      await feedOrders(deps, shopRecord, orders(), {
        trigger: "backfill",
        ...(signal ? { signal } : {}),
      });
      await deps.backfills.complete(backfillId, done);
      await job.updateProgress({ done, total: backfill.total });
      log.info({ done }, "backfill completed");
      return { outcome: "completed", done };
    } catch (error) {
      if (signal?.aborted) {
        // A shutdown: back to the queue at once; the next worker resumes from the saved cursor.
        log.info("backfill stopped; it resumes from its cursor");
        await job.moveToDelayed(Date.now() + 250, token);
        throw new DelayedError();
      }
      const message = error instanceof Error ? error.message : String(error);
      // Shopify refuses the shop's token: the backfill waits, from its cursor, for the merchant
      // to open the app again (the reconnect resumes it); retrying before would only fail.
      if (error instanceof ShopifyTokenError) {
        await deps.backfills.setStatus(backfillId, "paused");
        log.warn(
          { err: { name: error.name, message } },
          "backfill paused until the shop reconnects",
        );
        throw new UnrecoverableError(message);
      }
      if (error instanceof ShopNotConnectedError || error instanceof ShopNotConfiguredError) {
        await deps.backfills.fail(backfillId, message);
        throw new UnrecoverableError(message);
      }
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1))
        await deps.backfills.fail(backfillId, message);
      log.warn({ err: { name: (error as Error).name, message } }, "backfill page failed; retrying");
      throw error;
    }
  };
}
