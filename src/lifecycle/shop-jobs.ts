import {
  BackfillQueue,
  type BackfillRepository,
  progressOf,
  type ResyncDeps,
  resync,
  SweepScheduler,
} from "../backfill/index.ts";
import { dropQueuedWork } from "../engine/shop-work.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { ShopRecord } from "../store/index.ts";
import type { OrderRef } from "../sync/order-ref.ts";

/** What the shop's background work needs: the backfill records, Redis, and what resync reads. */
export interface ShopJobsDeps extends ResyncDeps {
  backfills: BackfillRepository;
  redis: RedisConnection;
  prefix: string;
  reconcileIntervalMs: number;
}

/**
 * The background work a shop has besides live webhooks, as the web process starts and stops
 * it: the backfill and resync the settings page drives, and the reconciliation sweep's
 * schedule, created at install and removed at uninstall (the sweep worker also re-creates the
 * schedules of every installed shop when it starts).
 */
export function createShopJobs(ctx: ShopJobsDeps) {
  const { backfills } = ctx;
  const backfillQueue = new BackfillQueue(ctx.redis, ctx.prefix, backfills);
  const sweeps = new SweepScheduler(ctx.redis, ctx.prefix, ctx.reconcileIntervalMs);

  const backfill = {
    async start(shop: ShopRecord, since: string) {
      const { backfill } = await backfillQueue.start(shop.shop, { since });
      return progressOf(backfill, { scopes: shop.scopes });
    },
    async latest(shop: ShopRecord) {
      const record = await backfills.latest(shop.shop);
      return record ? progressOf(record, { scopes: shop.scopes }) : null;
    },
  };
  const resyncOrder = {
    order: (shop: ShopRecord, order: OrderRef) => resync(ctx, shop, { kind: "order", order }),
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
      const running = await backfills.active(shop);
      if (running) await backfills.setStatus(running.id, "paused");
    },
    async close() {
      await Promise.all([backfillQueue.close(), sweeps.close()]);
    },
  };
}

export type ShopJobs = ReturnType<typeof createShopJobs>;
