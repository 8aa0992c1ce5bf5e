import type { Session } from "@shopify/shopify-api";
import { ClaimsSettings } from "../features/claims/settings.ts";
import { createProducts } from "../features/products/compose.ts";
import { formatOf, importView, ProductImportQueue } from "../features/products/index.ts";
import { RegistrationReader } from "../features/registrations/index.ts";
import { RegistrationEvents } from "../features/registrations/settings.ts";
import { ProviderEventIngest } from "../ingest/provider-event-ingest.ts";
import { listen } from "../lib/listen.ts";
import { errorText } from "../lib/redact.ts";
import { createShopJobs } from "../lifecycle/shop-jobs.ts";
import { createWebhookIngest } from "../lifecycle/webhook-receiver.ts";
import { readHeartbeats, startHeartbeat } from "../metrics/index.ts";
import { BulkRetryQueue } from "../ops/bulk-retry.ts";
import { OrderQueues } from "../queue/order-queues.ts";
import { ProviderEventQueue } from "../queue/provider-event-queue.ts";
import { createWebApp, type WebApp } from "../server/app.ts";
import { isFirstWebProcess } from "../server/web-cluster.ts";
import { type SettingsCatalogImports, SettingsService } from "../settings/index.ts";
import type { Connector } from "./connector.ts";
import { liveShareOf } from "./stores.ts";

/**
 * The web app's parts, put together: the receiver's ingest on its own fail-fast connection
 * (a Redis outage answers 503 at once instead of queueing in memory), the lifecycle handlers,
 * a shop's background jobs (backfill, resync, sweep schedule), the settings service, and the
 * provider's webhooks (queued on the same fail-fast connection) with their Claims section.
 */
export function composeWebApp(
  connector: Connector,
  hooks: { onOutcome?: (topic: string, outcome: string) => void } = {},
): WebApp {
  const { config, prefix, ingestRedis } = connector;
  const ingestQueues = new OrderQueues(
    ingestRedis,
    prefix,
    { attempts: config.env.SYNC_ATTEMPTS, delayMs: config.env.SYNC_RETRY_DELAY_MS },
    // Shopify gives a webhook 5 s: never wait long for an operator's retry of the same entry.
    {
      deadLetterLockWaitMs: 1_000,
      liveShare: liveShareOf(config.env),
      syncShards: config.env.SYNC_QUEUE_SHARDS,
    },
  );
  const shopJobs = createShopJobs(connector);
  const reconnects = new BulkRetryQueue(connector.redis, prefix);
  /**
   * What waited for the shop's token goes on once the merchant has given a new one: the paused
   * backfill, the orders dead-lettered because Shopify refused the token (a shop that cannot
   * sync yet keeps them, as a retry checks first), and the claims' order tags it refused. One
   * job on the maintenance queue does it all (one per shop at a time), run by the worker role:
   * the install only queues it, and a web process restarted meanwhile loses nothing.
   */
  const reconnected = async (shop: string) => {
    const log = connector.logger.child({ component: "install", shop });
    try {
      const job = await reconnects.reconnected(shop);
      log.info(
        { jobId: job.id, created: job.created },
        "what waited for the shop's token is queued for the worker role",
      );
    } catch (error) {
      log.warn(
        { err: { message: errorText(error) } },
        `could not queue what waited for the shop's token: the shop's next reconciliation sweep queues it; to resume it now, run \`connector dlq retry --all --shop ${shop} --reason config\` and \`connector backfill --shop ${shop} --detach\``,
      );
    }
  };
  // Read when scraped: the unfinished backfills and every role's newest heartbeat.
  connector.metrics.trackBackfills(() => connector.backfills.unfinished());
  connector.metrics.trackHeartbeats(() => readHeartbeats(connector.redis, prefix));
  const ingest = createWebhookIngest(connector, {
    redis: ingestRedis,
    queues: ingestQueues,
    shopJobs,
  });
  const productImports = new ProductImportQueue(connector.redis, prefix);
  const providerEventQueue = new ProviderEventQueue(ingestRedis, prefix);
  const defaultBaseUrl = connector.providers.endpoints("production").baseUrl;
  const providerWebhooks = new ProviderEventIngest({
    events: connector.providerEvents,
    webhookSecrets: connector.webhookSecrets,
    secrets: connector.secrets,
    queue: providerEventQueue,
    defaultBaseUrl,
    logger: connector.logger.child({ component: "provider-webhooks" }),
  });
  const claimsSettings = new ClaimsSettings({
    // The claims' order tags Shopify refused before the scope was granted: the reconnect's job
    // applies them again (its last step), in the worker role, as it does after a reconnect.
    retag: async (shop) => {
      await reconnects.reconnected(shop);
    },
    claims: connector.claims,
    events: connector.providerEvents,
    webhookSecrets: connector.webhookSecrets,
    shops: connector.shops,
    secrets: connector.secrets,
    shopifyAdmin: connector.shopifyAdmin,
    defaultBaseUrl,
    appUrl: config.appUrl,
    logger: connector.logger.child({ component: "settings" }),
  });
  return createWebApp(
    {
      ...connector,
      admin: connector,
      ingest,
      providerWebhooks,
      claimsSettings,
      registrationEvents: new RegistrationEvents({
        events: connector.providerEvents,
        accountOf: (shop) => claimsSettings.accountOf(shop),
      }),
      settings: new SettingsService(connector, {
        backfill: shopJobs.backfill,
        resync: shopJobs.resync,
        // A page waits a few seconds at most for the store's budget (bulk: orders go first).
        registrations: new RegistrationReader(
          { ...connector, logger: connector.logger.child({ component: "registrations" }) },
          { maxWaitMs: 8_000 },
        ),
        catalogImports: catalogImports(connector, productImports),
      }),
      async installed(session: Session) {
        const record = await connector.installer.install(session);
        await shopJobs.installed(session.shop);
        // Queued, not run here: the merchant's page does not wait for the shop's backlog.
        await reconnected(session.shop);
        return record;
      },
      async close() {
        await shopJobs.close();
        await reconnects.close();
        await productImports.close();
        await ingestQueues.close();
        await providerEventQueue.close();
      },
    },
    hooks,
  );
}

/** Largest product file the settings page takes (about 20,000 CSV rows). */
const MAX_PRODUCT_FILE_BYTES = 5 * 1024 * 1024;

/**
 * Product files from the settings page: checked at once (rules, then the shop's Shopify
 * catalog) and recorded; the sending runs in the workers, paced at bulk priority.
 */
function catalogImports(connector: Connector, queue: ProductImportQueue): SettingsCatalogImports {
  const products = createProducts(connector, connector.providers);
  const latest = async (shop: string) => {
    const record = await products.imports.latest(shop);
    return record ? importView(record, await products.imports.rows(record.id)) : null;
  };
  return {
    maxBytes: MAX_PRODUCT_FILE_BYTES,
    async upload(shop, file) {
      const format = formatOf(file.name);
      if (!format) return { ok: false, message: "Choose a .csv or a .json file.", field: "file" };
      if (shop.storeId === null || !shop.providerClientId) {
        return {
          ok: false,
          message:
            "Finish the provider settings above first: products are imported into your store.",
        };
      }
      let prepared: Awaited<ReturnType<typeof products.importer.prepare>>;
      try {
        prepared = await products.importer.prepare(
          products.targetFor(shop),
          { name: file.name, text: file.text, format },
          { source: "settings", skipInvalid: file.skipInvalid },
        );
      } catch (error) {
        connector.logger.warn(
          { shop: shop.shop, err: { message: errorText(error) } },
          "settings: could not check a product file",
        );
        return {
          ok: false,
          message:
            "Shopify did not return your products just now, so the file could not be checked against them. Try again in a moment.",
        };
      }
      if (prepared.importId !== null) {
        await queue.enqueue({ importId: prepared.importId, shop: shop.shop });
      }
      const view = await latest(shop.shop);
      if (!view) return { ok: false, message: "The file has no products.", field: "file" };
      return { ok: true, view };
    },
    latest: (shop) => latest(shop.shop),
  };
}

/**
 * The web role: the Hono app (webhooks, install, settings, admin, health) on PORT. One web
 * process of a cluster also runs the start-up chores in the background: migrating non-expiring
 * Shopify tokens, and re-creating missing webhook subscriptions (resyncing the gap).
 */
export async function startWebRole(
  connector: Connector,
): Promise<{ url: string; close(): Promise<void> }> {
  const { config, logger } = connector;
  const web = composeWebApp(connector);
  const { server, port } = await listen(web.app.fetch, {
    port: config.env.PORT,
    host: config.host,
    what: "PORT",
  });
  logger.info({ url: config.appUrl, port, pid: process.pid }, "web process listening");
  const heartbeat = startHeartbeat(connector.redis, connector.prefix, "web", {
    onError: (error) =>
      logger.warn({ err: { message: errorText(error) } }, "heartbeat not written"),
  });
  if (isFirstWebProcess()) {
    // Shops installed before expiring tokens: exchanged in the background (Shopify refuses
    // non-expiring offline tokens from 2027-01-01).
    void connector.shopTokens.migrateAll().then((results) => {
      if (results.length > 0) logger.info({ results }, "non-expiring Shopify tokens migrated");
    });
    // Shopify deletes a subscription after repeated failed deliveries (an outage of ours).
    void connector.installer.checkAllSubscriptions().then((reports) => {
      const repaired = reports.filter((r) => r.created.length > 0);
      logger.info(
        { shops: reports.length, repaired: repaired.map((r) => r.shop) },
        "webhook subscriptions checked",
      );
    });
  }
  return {
    url: `http://${config.host}:${port}`,
    async close() {
      heartbeat.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await web.close();
    },
  };
}
