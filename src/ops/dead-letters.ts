import type { ConnectorContext } from "../context.ts";
import { DeadLetters } from "../queue/dead-letters.ts";
import { SnapshotStore } from "../queue/snapshot-store.ts";
import { WebhookIngest } from "../queue/webhook-ingest.ts";
import { createLifecycleHandlers } from "../server/lifecycle.ts";

/**
 * The dead-letter queue wired to a process's context (admin API, CLI). Payload entries are
 * re-ingested through the same receiver logic the webhook route uses.
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
    refetchOrder: ctx.refetchOrder,
    reingest: (webhook) => ingest.reingest(webhook),
  });
}
