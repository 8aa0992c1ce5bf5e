import { countQueuedForShop } from "../../engine/shop-work.ts";
import type { SyncQueues } from "../../queue/sync-queue.ts";
import type { LinkRepository, ShopRecord } from "../../store/index.ts";
import { PROTECTED_DATA_REASON } from "../../sync/index.ts";

export interface FailureView {
  order: string;
  when: string;
  /** In words, with what the merchant can do about it. */
  explanation: string;
  /** The error as recorded, to explain again once location names are known. */
  error: string;
}

export interface StatusView {
  synced: number;
  pending: number;
  /** True when the queue was too long to count to the end. */
  pendingAtLeast: boolean;
  failed: number;
  failures: FailureView[];
  /** Orders dead-lettered because Shopify withholds the customer: said once, at the top. */
  protectedDataWithheld: number;
}

/** Counts of synced, waiting and failed orders, and the five latest failures in words. */
export async function readSyncStatus(
  ctx: { links: LinkRepository; queues: SyncQueues },
  shop: ShopRecord,
): Promise<StatusView> {
  const counts = ctx.links.countByResult(shop.shop);
  const pending = await countQueuedForShop(ctx.queues.sync, shop.shop);
  const rows = ctx.links.latestFailures(shop.shop, 5);
  const withheld = ctx.links.countFailuresWithReason(shop.shop, PROTECTED_DATA_REASON);
  return {
    protectedDataWithheld: withheld,
    synced: counts.synced,
    pending: pending.count,
    pendingAtLeast: pending.truncated,
    failed: counts.failed + counts.deadLettered,
    failures: rows.map((r) => ({
      order: r.orderName ?? `Shopify order ${r.sourceOrderId}`,
      when: r.failedAt,
      explanation: explainFailure(r.error),
      error: r.error,
    })),
  };
}

/**
 * Turns a sync error into one sentence a merchant can act on, naming Shopify locations by their
 * names when known. An error that matches none of the cases is shown as it is.
 */
export function explainFailure(
  error: string,
  locationNames: ReadonlyMap<string, string> = new Map(),
): string {
  const location = /Shopify location (\d+)/.exec(error)?.[1];
  if (location || (/fulfillmentLocationId/.test(error) && /map|unknown|missing/i.test(error))) {
    const which = location
      ? `The Shopify location “${locationNames.get(location) ?? location}”`
      : "The order's Shopify location";
    return `${which} has no provider fulfillment location: map it under “Locations” below, then resync the order.`;
  }
  if (error.startsWith(PROTECTED_DATA_REASON)) {
    return "Shopify withheld this order's customer (see the notice at the top of the page).";
  }
  if (/currency/i.test(error)) {
    return "The order's currency differs from the provider store's currency: choose the provider store in that currency under “Store”, or ask the provider to add one.";
  }
  if (/paused|credentials|no provider store/i.test(error)) {
    return "The provider settings are incomplete or no longer accepted: check “Provider connection” above, then resync the order.";
  }
  if (/email|phone|address/i.test(error)) {
    return "The provider refused the customer's details on this order: correct them in Shopify and the order syncs again.";
  }
  return error;
}
