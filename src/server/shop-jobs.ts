import {
  BackfillQueue,
  BackfillRepository,
  progressOf,
  resync,
  SweepScheduler,
} from "../backfill/index.ts";
import type { ConnectorContext } from "../context.ts";
import { dropQueuedWork } from "../queue/shop-work.ts";
import type { SettingsBackfill, SettingsResync } from "./settings/index.ts";

/**
 * The background work a shop has besides live webhooks, as the web process starts and stops
 * it: the backfill and resync the settings page drives, and the reconciliation sweep's
 * schedule, created at install and removed at uninstall (the sweep worker also re-creates the
 * schedules of every installed shop when it starts).
 */
export function createShopJobs(ctx: ConnectorContext) {
  const backfills = new BackfillRepository(ctx.db);
  const backfillQueue = new BackfillQueue(ctx.redis, ctx.prefix, backfills);
  const sweeps = new SweepScheduler(ctx.redis, ctx.prefix, ctx.config.env.RECONCILE_INTERVAL_MS);

  const backfill: SettingsBackfill = {
    async start(shop, since) {
      const { backfill } = await backfillQueue.start(shop.shop, { since });
      return progressOf(backfill, { scopes: shop.scopes });
    },
    async latest(shop) {
      const record = backfills.latest(shop.shop);
      return record ? progressOf(record, { scopes: shop.scopes }) : null;
    },
  };
  const resyncOrder: SettingsResync = {
    order: (shop, name) => resync(ctx, shop, { kind: "order", order: name }),
  };

  return {
    backfill,
    resync: resyncOrder,
    async installed(shop: string) {
      await sweeps.schedule(shop);
    },
    /** Stops what is queued for the shop; a running backfill is paused (resumable on reinstall). */
    async uninstalled(shop: string) {
      await sweeps.unschedule(shop);
      await dropQueuedWork(backfillQueue.queue, shop);
      const running = backfills.active(shop);
      if (running) backfills.setStatus(running.id, "paused");
    },
    async close() {
      await Promise.all([backfillQueue.close(), sweeps.close()]);
    },
  };
}
