import type { Logger } from "pino";
import { dropQueuedWork, redactDeadLetters, removeShopDeadLetters } from "../engine/shop-work.ts";
import type { SnapshotStore } from "../ingest/snapshot-store.ts";
import type { LifecycleHandlers } from "../ingest/webhook-ingest.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SyncJobData } from "../queue/jobs.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import { ShopifyTokenError } from "../shopify/admin-client.ts";
import { type AdminClientFactory, ShopNotConnectedError } from "../shopify/index.ts";
import type { SealedSessionStorage } from "../shopify/install/index.ts";
import type {
  LinkRepository,
  PrivacyRequestRepository,
  ProviderEventRepository,
  ShopRepository,
} from "../store/index.ts";

/** What the lifecycle handlers act on. */
export interface LifecycleDeps {
  shops: ShopRepository;
  sessions: SealedSessionStorage;
  privacyRequests: PrivacyRequestRepository;
  /** The provider's stored events (their bodies carry customer data). */
  providerEvents: ProviderEventRepository;
  /** The order links: which provider order and name a Shopify order has. */
  links: Pick<LinkRepository, "getOrderLinkRow">;
  snapshots: SnapshotStore;
  queues: OrderQueues;
  /** Where retired dead letters are remembered (the dead-letter queue's Redis and prefix). */
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
  /** Admin GraphQL per shop: asks Shopify whether an app/uninstalled is true. */
  shopifyAdmin: AdminClientFactory;
}

/** The cheapest Admin API query: it answers for an installed app, 401 for an uninstalled one. */
const INSTALL_CHECK = `#graphql
  query ConnectorInstallCheck { shop { id } }`;

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
 * answered: customers/redact deletes the snapshots of the customer's orders, strips the
 * stored bodies of their dead letters and reduces the provider's events that name the customer
 * or their orders to their IDs; shop/redact deletes everything the connector holds for the shop
 * (links, snapshots, dead letters, sessions, settings, claims) and the provider events of its
 * store unless another shop shares that store. The record keeps only IDs.
 */
export function createLifecycleHandlers(
  ctx: LifecycleDeps,
  options: LifecycleOptions = {},
): LifecycleHandlers {
  const retired = { redis: ctx.redis, prefix: ctx.prefix };

  return {
    async confirmUninstalled(shop) {
      const record = await ctx.shops.getShop(shop);
      // No token to ask with (never installed, or already uninstalled): nothing left to stop.
      if (!record?.accessTokenSealed || record.status === "uninstalled") return "uninstalled";
      try {
        await ctx.shopifyAdmin.for(record).request(INSTALL_CHECK);
      } catch (error) {
        // 401 (after one refresh of an expiring token): Shopify says the app is gone.
        if (error instanceof ShopifyTokenError || error instanceof ShopNotConnectedError) {
          return "uninstalled";
        }
        throw error;
      }
      ctx.logger.warn(
        { shop },
        "app/uninstalled refused: Shopify still accepts the shop's token (a replayed or forged delivery)",
      );
      return "installed";
    },

    async appUninstalled(shop) {
      if (await ctx.shops.getShop(shop)) await ctx.shops.setStatus(shop, "uninstalled");
      options.onShopChanged?.(shop);
      const dropped = await dropShopSyncJobs(ctx.queues, shop);
      await ctx.sessions.deleteShopSessions(shop);
      await options.onUninstalled?.(shop);
      ctx.logger.info({ shop, droppedJobs: dropped }, "app uninstalled; sync stopped, links kept");
    },

    async shopUpdated(shop, update) {
      const known = await ctx.shops.getShop(shop);
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
      await ctx.shops.updateSettings(shop, changes);
      options.onShopChanged?.(shop);
      ctx.logger.info({ shop, changed: Object.keys(changes) }, "shop settings changed in Shopify");
    },

    async privacy(shop, event) {
      const ids = { customerId: event.customerId, orderIds: event.orderIds };
      const request = await ctx.privacyRequests.received(shop, event.topic, ids);
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
        const providerEvents = await redactProviderEvents(ctx, shop, event);
        done = {
          ...ids,
          snapshotsDeleted: snapshots,
          deadLettersRedacted: deadLetters,
          providerEventsRedacted: providerEvents,
        };
      } else if (event.topic === "shop/redact") {
        options.onShopChanged?.(shop);
        const jobs = await dropShopSyncJobs(ctx.queues, shop);
        const snapshots = await ctx.snapshots.deleteShop(shop);
        const deadLetters = await removeShopDeadLetters(ctx.queues.deadLetter, retired, shop);
        await ctx.sessions.deleteShopSessions(shop);
        await options.onUninstalled?.(shop);
        const known = await ctx.shops.getShop(shop);
        await ctx.shops.deleteShopData(shop);
        // After the shop's row is gone: the shops still bound to its store are the others.
        const events = await ctx.providerEvents.forgetShop(
          { shop, storeId: known?.storeId ?? null },
          async (storeId) =>
            (await ctx.providerEvents.shopsBoundTo(storeId)).filter((s) => s !== shop),
        );
        done = {
          snapshotsDeleted: snapshots,
          deadLettersDeleted: deadLetters,
          jobsDropped: jobs,
          providerEventsDeleted: events.deleted,
        };
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
      await ctx.privacyRequests.complete(request, done);
      ctx.logger.info({ shop, topic: event.topic }, "privacy request recorded and acted on");
    },
  };
}

/**
 * The provider's stored events about the customer, for the shop's store: those naming their
 * email or one of their orders (by Shopify ID, the provider's ID or the order's name).
 */
async function redactProviderEvents(
  ctx: LifecycleDeps,
  shop: string,
  event: { email?: string | null; orderIds: string[] },
): Promise<number> {
  const known = await ctx.shops.getShop(shop);
  const providerOrderIds: number[] = [];
  const orderNames: string[] = [];
  for (const orderId of event.orderIds) {
    const link = await ctx.links.getOrderLinkRow(shop, orderId);
    if (link?.orderId != null) providerOrderIds.push(link.orderId);
    if (link?.orderName) orderNames.push(link.orderName);
  }
  return ctx.providerEvents.redactCustomer(
    { shop, storeId: known?.storeId ?? null },
    {
      emails: event.email ? [event.email.trim().toLowerCase()] : [],
      sourceOrderIds: event.orderIds,
      providerOrderIds,
      orderNames,
    },
  );
}

/** Drops the shop's jobs that have not started from each sync shard it may have jobs in. */
async function dropShopSyncJobs(queues: OrderQueues, shop: string): Promise<number> {
  let dropped = 0;
  for (const queue of await queues.syncQueuesOfShop(shop)) {
    dropped += await dropQueuedWork<SyncJobData>(queue, shop);
  }
  return dropped;
}
