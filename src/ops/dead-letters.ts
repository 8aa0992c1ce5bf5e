import type { ConnectorContext } from "../context.ts";
import { DeadLetters } from "../queue/dead-letters.ts";
import { SnapshotStore } from "../queue/snapshot-store.ts";
import { WebhookIngest } from "../queue/webhook-ingest.ts";
import { createLifecycleHandlers } from "../server/lifecycle.ts";
import { OrderSource, ShopNotConnectedError } from "../shopify/index.ts";
import type { ShopRecord } from "../store/index.ts";
import type { ShopDomain } from "../sync/source-order.ts";

/**
 * An order's current state from the Shopify Admin API (the same client the worker refetches
 * stale snapshots with); null for a shop without an access token.
 */
function refetchFromShopify(ctx: ConnectorContext) {
  return async (shop: ShopRecord, orderId: string) => {
    try {
      return await new OrderSource(ctx.shopifyAdmin.for(shop), shop.shop as ShopDomain).fetchOrder(
        orderId,
      );
    } catch (error) {
      if (error instanceof ShopNotConnectedError) return null;
      throw error;
    }
  };
}

/**
 * The dead-letter queue wired to a process's context (admin API, CLI). Orders whose snapshot
 * expired are refetched from Shopify; payload entries are re-ingested through the same receiver
 * logic the webhook route uses.
 */
export function createDeadLetters(ctx: ConnectorContext): DeadLetters {
  const ingest = new WebhookIngest({
    redis: ctx.redis,
    prefix: ctx.prefix,
    snapshots: new SnapshotStore(ctx.redis, { prefix: ctx.prefix }),
    queues: ctx.queues,
    shops: { shopStatus: (shop) => ctx.shops.getShop(shop)?.status ?? "unknown" },
    lifecycle: createLifecycleHandlers(ctx),
  });
  return new DeadLetters({
    queues: ctx.queues,
    redis: ctx.redis,
    prefix: ctx.prefix,
    snapshots: ctx.snapshots,
    shops: ctx.shops,
    logger: ctx.logger.child({ component: "dead-letters" }),
    refetchOrder: ctx.refetchOrder ?? refetchFromShopify(ctx),
    reingest: (webhook) => ingest.reingest(webhook),
  });
}
