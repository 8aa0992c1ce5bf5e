import { DeadLetters, type DeadLettersDeps } from "../engine/dead-letters.ts";
import { createWebhookIngest, type WebhookReceiverDeps } from "../lifecycle/webhook-receiver.ts";

/** What the dead-letter queue's operations need: its own deps and the receiver's. */
export interface DeadLetterOpsDeps
  extends WebhookReceiverDeps,
    Omit<DeadLettersDeps, "logger" | "reingest" | "refetchOrder" | "links"> {
  refetchOrder: NonNullable<DeadLettersDeps["refetchOrder"]>;
  links: WebhookReceiverDeps["links"] & DeadLettersDeps["links"];
}

/**
 * The dead-letter queue wired to a process's context (admin API, CLI). Orders whose snapshot
 * expired are refetched from Shopify; payload entries are re-ingested through the receiver the
 * webhook route uses, lifecycle hooks included (a retried app/uninstalled stops the shop's
 * background work). The shop's status is read fresh for each retry.
 */
export function createDeadLetters(ctx: DeadLetterOpsDeps): DeadLetters {
  const ingest = createWebhookIngest(ctx, { statusTtlMs: 0 });
  return new DeadLetters({
    queues: ctx.queues,
    redis: ctx.redis,
    prefix: ctx.prefix,
    snapshots: ctx.snapshots,
    shops: ctx.shops,
    links: ctx.links,
    logger: ctx.logger.child({ component: "dead-letters" }),
    refetchOrder: (shop, orderId) => ctx.refetchOrder(shop, orderId),
    reingest: (webhook) => ingest.reingest(webhook),
  });
}
