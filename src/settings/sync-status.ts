import { countQueuedForShop } from "../engine/shop-work.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import type { LinkRepository, ShopRecord, ShopRepository } from "../store/index.ts";
import type { FailureRecord } from "../sync/index.ts";

export interface FailureView {
  order: string;
  when: string;
  /** In words, with what the merchant can do about it. */
  explanation: string;
  /** The failure as recorded (null before categories were kept), to explain again with names. */
  failure: FailureRecord | null;
  /** The error as it was worded. */
  error: string;
}

export interface StatusView {
  synced: number;
  pending: number;
  /** True when the queue was too long to count to the end. */
  pendingAtLeast: boolean;
  failed: number;
  /** Orders kept out: sold without an address to ship to and nothing ships (POS sales). */
  notShipped: number;
  failures: FailureView[];
  /** Orders dead-lettered because Shopify withholds the customer: said once, at the top. */
  protectedDataWithheld: number;
}

/** Counts of synced, waiting and failed orders, and the five latest failures in words. */
export async function readSyncStatus(
  ctx: { links: LinkRepository; queues: OrderQueues; shops: ShopRepository },
  shop: ShopRecord,
): Promise<StatusView> {
  const counts = await ctx.links.countByResult(shop.shop);
  const notShipped = await ctx.shops.countKeptOut(shop.shop, "no-address");
  // The store's jobs are in its shard (and, while an older shard count drains, in that one's).
  let pending = { count: 0, truncated: false };
  for (const queue of await ctx.queues.syncQueuesOfShop(shop.shop)) {
    const found = await countQueuedForShop(queue, shop.shop);
    pending = {
      count: pending.count + found.count,
      truncated: pending.truncated || found.truncated,
    };
  }
  const rows = await ctx.links.latestFailures(shop.shop, 5);
  const withheld = await ctx.links.countFailures(shop.shop, "protected-data");
  return {
    protectedDataWithheld: withheld,
    synced: counts.synced,
    pending: pending.count,
    pendingAtLeast: pending.truncated,
    failed: counts.failed + counts.deadLettered,
    notShipped,
    failures: rows.map((r) => ({
      order: r.orderName ?? `Shopify order ${r.sourceOrderId}`,
      when: r.failedAt,
      explanation: explainFailure(r.failure ?? r.error),
      failure: r.failure,
      error: r.error,
    })),
  };
}

/** Where a failure sends the merchant, by its category and the fields it names. */
const LOCATION_FIELD = /^fulfillments\.\d+\.fulfillmentLocationId$/;
const CUSTOMER_FIELD = /^(customer|billingAddress|shippingAddress)(\.|$)/;

/**
 * Turns a recorded failure into one sentence a merchant can act on, naming Shopify locations by
 * their names when known. It decides by the failure's category and the field paths it names,
 * never by its wording; a failure recorded before categories were kept, or one that matches no
 * case, is shown as it was worded.
 */
export function explainFailure(
  failure: FailureRecord | string,
  locationNames: ReadonlyMap<string, string> = new Map(),
): string {
  if (typeof failure === "string") return failure;
  const { category, fields } = failure;
  if (category === "protected-data") {
    return "Shopify withheld this order's customer (see the notice at the top of the page).";
  }
  if (category === "config") {
    const location = fields.find((f) => LOCATION_FIELD.test(f.path));
    if (location) {
      const which = location.ref
        ? `The Shopify location “${locationNames.get(location.ref) ?? location.ref}”`
        : "The order's Shopify location";
      return `${which} has no provider fulfillment location: map it under “Locations” below, then resync the order.`;
    }
    if (fields.some((f) => f.path === "currency")) {
      return "The order's currency differs from the provider store's currency: choose the provider store in that currency under “Store”, or ask the provider to add one.";
    }
    return "The provider settings are incomplete or no longer accepted: check “Provider connection” above, then resync the order.";
  }
  if (
    (category === "provider-validation" || category === "mapping") &&
    fields.length > 0 &&
    fields.every((f) => CUSTOMER_FIELD.test(f.path))
  ) {
    return "The provider refused the customer's details on this order: correct them in Shopify and the order syncs again.";
  }
  return failure.message;
}
