import { and, desc, eq } from "drizzle-orm";
import type { ConnectorContext } from "../../context.ts";
import { countQueuedForShop } from "../../queue/shop-work.ts";
import { type ShopRecord, schema } from "../../store/index.ts";

export interface FailureView {
  order: string;
  when: string;
  /** In words, with what the merchant can do about it. */
  explanation: string;
}

export interface StatusView {
  synced: number;
  pending: number;
  /** True when the queue was too long to count to the end. */
  pendingAtLeast: boolean;
  failed: number;
  failures: FailureView[];
}

/** Counts of synced, waiting and failed orders, and the five latest failures in words. */
export async function readSyncStatus(ctx: ConnectorContext, shop: ShopRecord): Promise<StatusView> {
  const counts = ctx.links.countByResult(shop.shop);
  const pending = await countQueuedForShop(ctx.queues.sync, shop.shop);
  const rows = ctx.db
    .select({
      sourceOrderId: schema.orderFailures.sourceOrderId,
      error: schema.orderFailures.error,
      failedAt: schema.orderFailures.failedAt,
      orderName: schema.orderLinks.orderName,
    })
    .from(schema.orderFailures)
    .leftJoin(
      schema.orderLinks,
      and(
        eq(schema.orderLinks.shop, schema.orderFailures.shop),
        eq(schema.orderLinks.sourceOrderId, schema.orderFailures.sourceOrderId),
      ),
    )
    .where(eq(schema.orderFailures.shop, shop.shop))
    .orderBy(desc(schema.orderFailures.failedAt))
    .limit(5)
    .all();
  return {
    synced: counts.synced,
    pending: pending.count,
    pendingAtLeast: pending.truncated,
    failed: counts.failed + counts.deadLettered,
    failures: rows.map((r) => ({
      order: r.orderName ?? `Shopify order ${r.sourceOrderId}`,
      when: r.failedAt,
      explanation: explainFailure(r.error),
    })),
  };
}

/** Turns a sync error into what a merchant can act on; unknown errors are shown as they are. */
export function explainFailure(error: string): string {
  if (/fulfillmentLocationId|location/i.test(error) && /map|unknown|missing/i.test(error)) {
    return `A Shopify location is not mapped to a provider fulfillment location: map it under "Locations" below, then resync the order. (${error})`;
  }
  if (/currency/i.test(error)) {
    return `The order's currency differs from the provider store's currency. (${error})`;
  }
  if (/paused|credentials|no provider store/i.test(error)) {
    return `The provider settings are incomplete or no longer accepted: check "Provider connection" above. (${error})`;
  }
  if (/email|phone|address/i.test(error)) {
    return `The provider refused the customer's details on this order. Correct them in Shopify and the order syncs again. (${error})`;
  }
  return error;
}
