import { DeadLetters, type DeadLettersDeps } from "../engine/dead-letters.ts";
import { SnapshotStore } from "../ingest/snapshot-store.ts";
import { WebhookIngest } from "../ingest/webhook-ingest.ts";
import { createLifecycleHandlers, type LifecycleDeps } from "../lifecycle/shop-lifecycle.ts";

/** What the dead-letter queue's operations need: its own deps and the lifecycle's. */
export interface DeadLetterOpsDeps
  extends LifecycleDeps,
    Omit<DeadLettersDeps, "logger" | "reingest" | "refetchOrder"> {
  refetchOrder: NonNullable<DeadLettersDeps["refetchOrder"]>;
}

/**
 * The dead-letter queue wired to a process's context (admin API, CLI). Orders whose snapshot
 * expired are refetched from Shopify; payload entries are re-ingested through the same receiver
 * logic the webhook route uses.
 */
export function createDeadLetters(ctx: DeadLetterOpsDeps): DeadLetters {
  const ingest = new WebhookIngest({
    redis: ctx.redis,
    prefix: ctx.prefix,
    snapshots: new SnapshotStore(ctx.redis, { prefix: ctx.prefix }),
    queues: ctx.queues,
    shops: { shopStatus: async (shop) => (await ctx.shops.getShop(shop))?.status ?? "unknown" },
    lifecycle: createLifecycleHandlers(ctx),
  });
  return new DeadLetters({
    queues: ctx.queues,
    redis: ctx.redis,
    prefix: ctx.prefix,
    snapshots: ctx.snapshots,
    shops: ctx.shops,
    logger: ctx.logger.child({ component: "dead-letters" }),
    refetchOrder: (shop, orderId) => ctx.refetchOrder(shop, orderId),
    reingest: (webhook) => ingest.reingest(webhook),
  });
}
