import { resync } from "../backfill/resync.ts";
import type { Env } from "../config/env.ts";
import { type LimiterOptions, StoreRateLimiter } from "../engine/limiter/index.ts";
import { ProviderClients, type ProviderEndpoints } from "../engine/provider-clients.ts";
import { AdminClientFactory, refetchFromShopify, type Shopify } from "../shopify/index.ts";
import { ShopInstaller } from "../shopify/install/index.ts";
import { ShopTokens } from "../shopify/install/shop-tokens.ts";
import type { ShopRecord } from "../store/index.ts";
import type { SourceOrder } from "../sync/source-order.ts";
import {
  type Infrastructure,
  type InfrastructureOptions,
  openInfrastructure,
} from "./infrastructure.ts";
import { createStores, type Stores } from "./stores.ts";

/**
 * What every role shares: infrastructure, stores, the per-store limiter and the Shopify side
 * (Admin API clients, expiring tokens, the installer). Most CLI commands stop here; the few
 * that read from the provider add its clients (`withProvider` in app/cli.ts).
 */
export interface Core extends Infrastructure, Stores {
  limiter: StoreRateLimiter;
  /** Admin GraphQL clients per shop (backfill, resync, sweep, refetch of stale snapshots). */
  shopifyAdmin: AdminClientFactory;
  /** Keeps each shop's expiring Shopify token fresh; migrates non-expiring ones. */
  shopTokens: ShopTokens;
  /** `@shopify/shopify-api`, configured once (OAuth, webhook HMACs, Admin GraphQL). */
  shopify: Shopify;
  /** Install, subscriptions check (start-up and sweep). */
  installer: ShopInstaller;
  /** An order's current state from Shopify (worker and dead-letter retry alike). */
  refetchOrder: (shop: ShopRecord, orderId: string) => Promise<SourceOrder | null>;
  reconcileIntervalMs: number;
  /** Days the provider's event bodies are kept (PROVIDER_EVENT_RETENTION_DAYS). */
  providerEventRetentionDays: number;
}

/** The web and worker roles: the core and the provider's clients. */
export interface Connector extends Core {
  providers: ProviderClients;
}

export interface ConnectorOptions extends InfrastructureOptions {
  providerDefaults: ProviderEndpoints;
  /** The staging environment's endpoints; production's (providerDefaults) when absent. */
  providerStaging?: ProviderEndpoints | undefined;
  /** Lets tests and chaos runs pass a fetch with faults or counters. */
  providerFetch?: typeof fetch | undefined;
}

/** The per-store limiter's settings, every one read from the environment. */
export function limiterOptions(env: Env, prefix: string): LimiterOptions {
  return {
    limit: env.PROVIDER_RATE_LIMIT,
    windowMs: env.PROVIDER_RATE_WINDOW_MS,
    ...(env.PROVIDER_RATE_MARGIN_MS !== undefined ? { marginMs: env.PROVIDER_RATE_MARGIN_MS } : {}),
    paceBulk: env.LIMITER_PACE_BULK,
    liveSlowStart: env.LIMITER_LIVE_SLOW_START,
    prefix,
  };
}

/** The CLI's composition: everything but the provider. */
export function createCore(options: InfrastructureOptions): Core {
  const infra = openInfrastructure(options);
  const stores = createStores(infra);
  const { config, logger, prefix } = infra;
  const limiter = new StoreRateLimiter(infra.jobRedis, limiterOptions(config.env, prefix));
  const shopifyAdmin = new AdminClientFactory({ config, secrets: infra.secrets, logger });
  const shopTokens = new ShopTokens({
    shopify: shopifyAdmin.shopify,
    shops: stores.shops,
    secrets: infra.secrets,
    redis: infra.redis,
    prefix,
    logger: logger.child({ component: "shopify-tokens" }),
    onRefresh: infra.metrics.tokenRefresh,
  });
  shopifyAdmin.tokensFor = (shop) => ({
    current: () => shopTokens.current(shop),
    refresh: (stale) => shopTokens.refresh(shop, stale),
  });
  const installer = new ShopInstaller({
    adminFor: (shop) => shopifyAdmin.for(shop),
    shops: stores.shops,
    sessions: stores.sessions,
    secrets: infra.secrets,
    callbackUrl: new URL("/webhooks/shopify", config.appUrl).toString(),
    webhookRegistration: config.webhookRegistration,
    logger: logger.child({ component: "install" }),
    // A subscription was missing: the orders changed since the last good check are read
    // from the Admin API and reconciled (bulk priority, live webhooks first).
    resyncSince: async (shop, since) => {
      const record = await stores.shops.getShop(shop);
      if (!record) return;
      await resync(
        { shopifyAdmin, snapshots: stores.snapshots, queues: stores.queues, limiter },
        record,
        {
          kind: "range",
          since: since.toISOString(),
        },
      );
    },
  });
  return {
    ...infra,
    ...stores,
    limiter,
    shopifyAdmin,
    shopTokens,
    shopify: shopifyAdmin.shopify,
    installer,
    refetchOrder: refetchFromShopify(shopifyAdmin),
    reconcileIntervalMs: config.env.RECONCILE_INTERVAL_MS,
    providerEventRetentionDays: config.env.PROVIDER_EVENT_RETENTION_DAYS,
    async close() {
      await stores.queues.close();
      await infra.close();
    },
  };
}

/** The web and worker roles' composition. */
export function createConnector(options: ConnectorOptions): Connector {
  const core = createCore(options);
  return { ...core, providers: createProviderClients(core, options) };
}

/**
 * The provider's clients over a core: each request is marked as sent to the store's limiter and
 * every answer teaches it (the CLI's product commands build them this way too).
 */
export function createProviderClients(
  core: Core,
  options: Pick<ConnectorOptions, "providerDefaults" | "providerStaging" | "providerFetch">,
): ProviderClients {
  return new ProviderClients({
    limiter: core.limiter,
    secrets: core.secrets,
    redis: core.jobRedis,
    prefix: core.prefix,
    timeoutMs: core.config.env.PROVIDER_TIMEOUT_MS,
    production: options.providerDefaults,
    staging: options.providerStaging,
    fetch: options.providerFetch,
    onResponse: (info) => core.metrics.providerResponse(info),
    logger: core.logger,
  });
}
