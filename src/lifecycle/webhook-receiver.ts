import { cachedShopStatus } from "../ingest/shop-status.ts";
import { SnapshotStore } from "../ingest/snapshot-store.ts";
import { WebhookIngest } from "../ingest/webhook-ingest.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import { createShopJobs, type ShopJobs, type ShopJobsDeps } from "./shop-jobs.ts";
import { createLifecycleHandlers, type LifecycleDeps } from "./shop-lifecycle.ts";

/** What the receiver acts on: the lifecycle's deps and, for an uninstall, the shop's jobs'. */
export interface WebhookReceiverDeps extends LifecycleDeps, ShopJobsDeps {}

export interface WebhookReceiverOptions {
  /** The Redis the receiver writes to (the web's fail-fast connection); `ctx.redis` if absent. */
  redis?: RedisConnection;
  /** The queues it adds to (on that connection); `ctx.queues` if absent. */
  queues?: OrderQueues;
  /**
   * The shop's background work, stopped on an uninstall: the web process's own. Absent (the
   * dead-letter queue's retry, from the CLI or the admin API), one is opened for the uninstall
   * and closed after it.
   */
  shopJobs?: Pick<ShopJobs, "uninstalled">;
  /** How long a shop's status is cached; the web's receiver keeps it a few seconds. */
  statusTtlMs?: number;
}

/**
 * The one way a WebhookIngest is built: the webhook route and the dead-letter queue's retry of
 * a stored body go through the same receiver, lifecycle hooks included, so a dead-lettered
 * app/uninstalled retried later stops the shop's sweep schedule and backfill as a delivered one
 * does.
 */
export function createWebhookIngest(
  ctx: WebhookReceiverDeps,
  options: WebhookReceiverOptions = {},
): WebhookIngest {
  const redis = options.redis ?? ctx.redis;
  const shopStatus = cachedShopStatus(ctx, options.statusTtlMs);
  const shopJobs = options.shopJobs ?? {
    async uninstalled(shop: string) {
      const jobs = createShopJobs(ctx);
      try {
        await jobs.uninstalled(shop);
      } finally {
        await jobs.close();
      }
    },
  };
  return new WebhookIngest({
    redis,
    prefix: ctx.prefix,
    snapshots: new SnapshotStore(redis, { prefix: ctx.prefix }),
    queues: options.queues ?? ctx.queues,
    shops: shopStatus,
    lifecycle: createLifecycleHandlers(ctx, {
      onShopChanged: (shop) => shopStatus.forget(shop),
      onUninstalled: (shop) => shopJobs.uninstalled(shop),
    }),
  });
}
