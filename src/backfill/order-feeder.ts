import { feedAtBudget } from "../engine/budget-feeder.ts";
import type { StoreRateLimiter } from "../engine/limiter/index.ts";
import type { SnapshotStore } from "../ingest/snapshot-store.ts";
import type { SyncTrigger } from "../queue/jobs.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import type { ShopRecord } from "../store/index.ts";
import type { SourceOrder } from "../sync/source-order.ts";

export interface OrderFeederDeps {
  snapshots: SnapshotStore;
  queues: OrderQueues;
  limiter: StoreRateLimiter;
}

export interface FeedResult {
  /** Reconcile jobs queued at bulk priority. */
  queued: number;
  /** Orders whose snapshot was stored (newer than the one kept, or new). */
  stored: number;
}

/** The shop has no provider store: nothing it reads could be sent. */
export class ShopNotConfiguredError extends Error {
  override name = "ShopNotConfiguredError";
}

/**
 * Hands orders read from the Admin API to the sync pipeline. Each order's snapshot is stored only
 * when newer than the one kept (a webhook may have brought a fresher state); then its reconcile
 * job is queued at bulk priority through `feedAtBudget`, which queues a job only when the
 * store's limiter grants it a slot. The orders are pulled lazily: Shopify is read no faster than
 * the provider budget drains the work, and the sync queue never holds a backlog of delayed jobs.
 */
export async function feedOrders(
  deps: OrderFeederDeps,
  shop: ShopRecord,
  orders: AsyncIterable<SourceOrder>,
  options: { trigger: SyncTrigger; signal?: AbortSignal },
): Promise<FeedResult> {
  if (shop.storeId === null) {
    throw new ShopNotConfiguredError(`shop ${shop.shop} has no provider store configured`);
  }
  let stored = 0;
  async function* items() {
    for await (const order of orders) {
      if ((await deps.snapshots.storeOrder(order)) === "stored") stored++;
      yield {
        shop: shop.shop,
        orderId: order.id,
        trigger: options.trigger,
        receivedAt: Date.now(),
      };
    }
  }
  const queued = await feedAtBudget(deps, shop.storeId, items(), {
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { queued, stored };
}
