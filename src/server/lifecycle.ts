import { eq } from "drizzle-orm";
import type { ConnectorContext } from "../context.ts";
import type { LifecycleHandlers } from "../queue/webhook-ingest.ts";
import { schema } from "../store/index.ts";

/** Shopify's deadline for acting on a privacy request: 30 days. */
const PRIVACY_DUE_MS = 30 * 24 * 3600_000;

/**
 * app/uninstalled and the privacy topics. Uninstall stops the shop's sync at once (the worker
 * skips its jobs) and keeps its links; privacy requests are recorded with their due date and
 * acted on: stored snapshots of the orders named are deleted, and shop/redact removes the shop.
 */
export function createLifecycleHandlers(ctx: ConnectorContext): LifecycleHandlers {
  return {
    async appUninstalled(shop) {
      if (ctx.shops.getShop(shop)) ctx.shops.setStatus(shop, "uninstalled");
      ctx.logger.info({ shop }, "app uninstalled; sync stopped");
    },
    async privacy(shop, event) {
      const receivedAt = new Date();
      const row = ctx.db
        .insert(schema.privacyRequests)
        .values({
          shop,
          topic: event.topic,
          summary: JSON.stringify({ customerId: event.customerId, orderIds: event.orderIds }),
          receivedAt: receivedAt.toISOString(),
          dueBy: new Date(receivedAt.getTime() + PRIVACY_DUE_MS).toISOString(),
        })
        .returning({ id: schema.privacyRequests.id })
        .get();
      if (event.topic === "customers/redact") await ctx.snapshots.delete(shop, event.orderIds);
      if (event.topic === "shop/redact") {
        await ctx.snapshots.deleteShop(shop);
        ctx.shops.deleteShopData(shop);
      }
      // A data request is answered by the merchant from Shopify; we hold no more than IDs.
      ctx.db
        .update(schema.privacyRequests)
        .set({ completedAt: new Date().toISOString() })
        .where(eq(schema.privacyRequests.id, row.id))
        .run();
      ctx.logger.info({ shop, topic: event.topic }, "privacy request recorded and acted on");
    },
  };
}
