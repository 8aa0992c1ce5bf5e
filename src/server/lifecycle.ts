import { eq } from "drizzle-orm";
import type { ConnectorContext } from "../context.ts";
import type { SyncJobData } from "../queue/jobs.ts";
import { dropQueuedWork, redactDeadLetters, removeShopDeadLetters } from "../queue/shop-work.ts";
import type { LifecycleHandlers } from "../queue/webhook-ingest.ts";
import { schema } from "../store/index.ts";

/**
 * Shopify's deadline for acting on a privacy request: 30 days from receipt (customers/redact,
 * customers/data_request and shop/redact alike).
 */
export const PRIVACY_DUE_MS = 30 * 24 * 3600_000;

export interface LifecycleOptions {
  /** Called after a shop's status changed, so cached statuses (the receiver's) are dropped. */
  onShopChanged?(shop: string): void;
  /** Called once an uninstalled shop's work is dropped (its sweep schedule is removed). */
  onUninstalled?(shop: string): Promise<void>;
}

/**
 * app/uninstalled and the privacy topics.
 *
 * Uninstall stops the shop at once: its status is `uninstalled` (the worker skips its jobs and
 * the receiver stops queueing), its queued sync work is dropped, its token and sessions are
 * deleted. Links stay, so a reinstall resumes without creating a provider order twice.
 *
 * Privacy requests are recorded with their due date and acted on before the webhook is
 * answered: customers/redact deletes the snapshots of the customer's orders and strips the
 * stored bodies of their dead letters; shop/redact deletes everything the connector holds for
 * the shop (links, snapshots, dead letters, sessions, settings). The record keeps only IDs.
 */
export function createLifecycleHandlers(
  ctx: ConnectorContext,
  options: LifecycleOptions = {},
): LifecycleHandlers {
  const record = (shop: string, topic: string, summary: Record<string, unknown>) => {
    const receivedAt = new Date();
    return ctx.db
      .insert(schema.privacyRequests)
      .values({
        shop,
        topic,
        summary: JSON.stringify(summary),
        receivedAt: receivedAt.toISOString(),
        dueBy: new Date(receivedAt.getTime() + PRIVACY_DUE_MS).toISOString(),
      })
      .returning({ id: schema.privacyRequests.id })
      .get();
  };
  const retired = { redis: ctx.redis, prefix: ctx.prefix };
  const complete = (id: number, summary: Record<string, unknown>) =>
    ctx.db
      .update(schema.privacyRequests)
      .set({ completedAt: new Date().toISOString(), summary: JSON.stringify(summary) })
      .where(eq(schema.privacyRequests.id, id))
      .run();

  return {
    async appUninstalled(shop) {
      if (ctx.shops.getShop(shop)) ctx.shops.setStatus(shop, "uninstalled");
      options.onShopChanged?.(shop);
      const dropped = await dropQueuedWork<SyncJobData>(ctx.queues.sync, shop);
      await ctx.sessions.deleteShopSessions(shop);
      await options.onUninstalled?.(shop);
      ctx.logger.info({ shop, droppedJobs: dropped }, "app uninstalled; sync stopped, links kept");
    },

    async shopUpdated(shop, update) {
      const known = ctx.shops.getShop(shop);
      if (!known || known.status === "uninstalled") return;
      const changes = {
        ...(update.currency && update.currency !== known.shopCurrency
          ? { shopCurrency: update.currency }
          : {}),
        ...(update.timezone && update.timezone !== known.shopTimezone
          ? { shopTimezone: update.timezone }
          : {}),
      };
      if (Object.keys(changes).length === 0) return;
      ctx.shops.updateSettings(shop, changes);
      options.onShopChanged?.(shop);
      ctx.logger.info({ shop, changed: Object.keys(changes) }, "shop settings changed in Shopify");
    },

    async privacy(shop, event) {
      const ids = { customerId: event.customerId, orderIds: event.orderIds };
      const row = record(shop, event.topic, ids);
      let done: Record<string, unknown> = ids;
      if (event.topic === "customers/redact") {
        const snapshots = await ctx.snapshots.deleteCustomer(shop, {
          orderIds: event.orderIds,
          customerId: event.customerId,
        });
        const deadLetters = await redactDeadLetters(
          ctx.queues.deadLetter,
          retired,
          {
            shop,
            orderIds: event.orderIds,
            needles: [event.customerId, event.email].filter((v): v is string => Boolean(v)),
          },
          new Date().toISOString(),
        );
        done = { ...ids, snapshotsDeleted: snapshots, deadLettersRedacted: deadLetters };
      } else if (event.topic === "shop/redact") {
        options.onShopChanged?.(shop);
        const jobs = await dropQueuedWork<SyncJobData>(ctx.queues.sync, shop);
        const snapshots = await ctx.snapshots.deleteShop(shop);
        const deadLetters = await removeShopDeadLetters(ctx.queues.deadLetter, retired, shop);
        await ctx.sessions.deleteShopSessions(shop);
        await options.onUninstalled?.(shop);
        ctx.shops.deleteShopData(shop);
        done = { snapshotsDeleted: snapshots, deadLettersDeleted: deadLetters, jobsDropped: jobs };
      } else {
        // customers/data_request: the merchant answers it from Shopify. We hold the customer's
        // data only inside order snapshots (kept 14 days) and dead letters; the record names
        // which of the requested orders we hold, for the merchant's reply.
        const held = [];
        for (const orderId of event.orderIds) {
          if (await ctx.snapshots.get(shop, orderId)) held.push(orderId);
        }
        done = { ...ids, snapshotsHeld: held };
      }
      complete(row.id, done);
      ctx.logger.info({ shop, topic: event.topic }, "privacy request recorded and acted on");
    },
  };
}
