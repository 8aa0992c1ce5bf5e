import { dirname, join } from "node:path";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { resync } from "./backfill/resync.ts";
import type { RuntimeConfig } from "./config/runtime-config.ts";
import { createSecretBox, type SecretBox, sealedFor } from "./lib/secret-box.ts";
import { ConnectorMetrics } from "./metrics/index.ts";
import { ProviderClient } from "./provider/index.ts";
import { createRedis } from "./queue/connection.ts";
import { StoreRateLimiter } from "./queue/limiter/index.ts";
import { SnapshotStore } from "./queue/snapshot-store.ts";
import { SyncQueues } from "./queue/sync-queue.ts";
import { AdminClientFactory } from "./shopify/admin-clients.ts";
import type { Shopify } from "./shopify/index.ts";
import { SealedSessionStorage, ShopInstaller } from "./shopify/install/index.ts";
import { ShopTokens } from "./shopify/install/shop-tokens.ts";
import {
  type Db,
  LinkRepository,
  openDatabase,
  type ShopRecord,
  ShopRepository,
} from "./store/index.ts";
import type { SourceOrder } from "./sync/source-order.ts";

/** Where a shop's provider lives when its own settings do not say (env, or the sandbox). */
export interface ProviderDefaults {
  baseUrl: string;
  authUrl: string;
  audience: string;
}

export interface ConnectorContext {
  config: RuntimeConfig;
  logger: Logger;
  prefix: string;
  /** For BullMQ and everything that may wait out a Redis restart. */
  redis: Redis;
  /** For the webhook receiver: fails fast so it can answer 503. */
  ingestRedis: Redis;
  db: Db;
  shops: ShopRepository;
  links: LinkRepository;
  snapshots: SnapshotStore;
  queues: SyncQueues;
  limiter: StoreRateLimiter;
  secrets: SecretBox;
  /** Admin GraphQL clients per shop (backfill, resync, sweep, refetch of stale snapshots). */
  shopifyAdmin: AdminClientFactory;
  /** Keeps each shop's expiring Shopify token fresh; migrates non-expiring ones. */
  shopTokens: ShopTokens;
  /** `@shopify/shopify-api`, configured once (OAuth, webhook HMACs, Admin GraphQL). */
  shopify: Shopify;
  /** Shopify sessions in SQLite, tokens sealed (ADR 0004). */
  sessions: SealedSessionStorage;
  /** Install, subscriptions check (start-up and sweep). */
  installer: ShopInstaller;
  providerDefaults: ProviderDefaults;
  /** Where the provider's production or staging environment lives (settings page choice). */
  providerEndpoints(environment: "production" | "staging"): ProviderDefaults;
  providerFor(shop: ShopRecord): ProviderClient;
  /**
   * Fetches an order's current state from the Shopify Admin API, when that is wired (the
   * dead-letter retry uses it for orders whose snapshot expired).
   */
  refetchOrder?: (shop: ShopRecord, orderId: string) => Promise<SourceOrder | null>;
  /** This process's Prometheus metrics (served at /metrics). */
  metrics: ConnectorMetrics;
  /** Resolves once both Redis connections are up (the ingest one never queues offline). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export interface ContextOptions {
  config: RuntimeConfig;
  logger: Logger;
  redisUrl: string;
  prefix?: string;
  providerDefaults: ProviderDefaults;
  /** The process's metrics; a fresh registry when omitted. */
  metrics?: ConnectorMetrics;
  /** The staging environment's endpoints; production's (providerDefaults) when absent. */
  providerStaging?: ProviderDefaults;
  /** Lets tests and chaos runs pass a fetch with faults or counters. */
  providerFetch?: typeof fetch;
}

/**
 * Where `npm start` writes the URL of the private redis-server it started (next to the
 * database), so the CLI can reach the same Redis without REDIS_URL.
 */
export const redisUrlFile = (databasePath: string) =>
  join(dirname(databasePath), "redis", "redis.url");

/** Builds the shared parts once per process; server/ and workers/ only wire these together. */
export function createContext(options: ContextOptions): ConnectorContext {
  const { config, logger } = options;
  const prefix = options.prefix ?? "connector";
  const redis = createRedis(options.redisUrl, "worker", "connector");
  const ingestRedis = createRedis(options.redisUrl, "ingest", "connector-ingest");
  // The sync jobs' own commands (limiter scripts, snapshot and token reads): sixteen concurrent
  // jobs issue them in the same event-loop turns, so they share socket writes (BENCHMARKS.md).
  const jobRedis = createRedis(options.redisUrl, "pipelined", "connector-jobs");
  const db = openDatabase(config.env.DATABASE_PATH);
  const secrets = createSecretBox(config.encryptionKey, config.previousEncryptionKeys);
  const limiter = new StoreRateLimiter(jobRedis, {
    limit: config.env.PROVIDER_RATE_LIMIT,
    windowMs: config.env.PROVIDER_RATE_WINDOW_MS,
    ...(config.env.PROVIDER_RATE_MARGIN_MS !== undefined
      ? { marginMs: config.env.PROVIDER_RATE_MARGIN_MS }
      : {}),
    prefix,
  });
  const clients = new Map<string, { version: string; client: ProviderClient }>();
  const metrics = options.metrics ?? new ConnectorMetrics();

  const providerFor = (shop: ShopRecord): ProviderClient => {
    const cached = clients.get(shop.shop);
    if (cached && cached.version === shop.updatedAt) return cached.client;
    if (!shop.providerClientId || !shop.providerClientSecretSealed) {
      throw new Error(`shop ${shop.shop} has no provider credentials`);
    }
    const client = new ProviderClient({
      baseUrl: shop.providerBaseUrl ?? options.providerDefaults.baseUrl,
      authUrl: shop.providerAuthUrl ?? options.providerDefaults.authUrl,
      audience: shop.providerAudience ?? options.providerDefaults.audience,
      clientId: shop.providerClientId,
      clientSecret: secrets.open(
        shop.providerClientSecretSealed,
        sealedFor.providerClientSecret(shop.shop),
      ),
      secrets,
      redis: jobRedis,
      redisPrefix: prefix,
      timeoutMs: config.env.PROVIDER_TIMEOUT_MS,
      ...(options.providerFetch ? { fetch: options.providerFetch } : {}),
      beforeSend: (storeId) => limiter.sending(storeId),
      // Every response teaches the limiter what the server counts (other clients included).
      onResponse: (info) => {
        metrics.providerResponse(info);
        if (info.storeId === undefined) return;
        limiter.observe(info.storeId, info.rateLimit).catch((error: unknown) => {
          logger.warn(
            { err: { message: (error as Error).message } },
            "limiter could not learn from a response",
          );
        });
      },
    });
    clients.set(shop.shop, { version: shop.updatedAt, client });
    return client;
  };

  const shopifyAdmin = new AdminClientFactory({ config, secrets, logger });
  const shopify = shopifyAdmin.shopify;
  const shops = new ShopRepository(db);
  const shopTokens = new ShopTokens({
    shopify,
    shops,
    secrets,
    redis,
    prefix,
    logger: logger.child({ component: "shopify-tokens" }),
  });
  shopifyAdmin.tokensFor = (shop) => ({
    current: () => shopTokens.current(shop),
    refresh: (stale) => shopTokens.refresh(shop, stale),
  });
  const sessions = new SealedSessionStorage(db, secrets);
  const queues = new SyncQueues(redis, prefix, {
    attempts: config.env.SYNC_ATTEMPTS,
    delayMs: config.env.SYNC_RETRY_DELAY_MS,
  });
  const snapshots = new SnapshotStore(jobRedis, { prefix });
  const installer = new ShopInstaller({
    adminFor: (shop) => shopifyAdmin.for(shop),
    shops,
    sessions,
    secrets,
    callbackUrl: new URL("/webhooks/shopify", config.appUrl).toString(),
    webhookRegistration: config.webhookRegistration,
    logger: logger.child({ component: "install" }),
    // A subscription was missing: the orders changed since the last good check are read
    // from the Admin API and reconciled (bulk priority, live webhooks first).
    resyncSince: async (shop, since) => {
      const record = shops.getShop(shop);
      if (!record) return;
      await resync({ shopifyAdmin, snapshots, queues, limiter }, record, {
        kind: "range",
        since: since.toISOString(),
      });
    },
  });
  return {
    config,
    logger,
    prefix,
    redis,
    ingestRedis,
    db,
    shops,
    links: new LinkRepository(db),
    snapshots,
    queues,
    limiter,
    secrets,
    shopifyAdmin,
    shopTokens,
    shopify,
    sessions,
    installer,
    providerDefaults: options.providerDefaults,
    providerEndpoints: (environment) =>
      environment === "staging" && options.providerStaging
        ? options.providerStaging
        : options.providerDefaults,
    providerFor,
    metrics,
    async ready() {
      await Promise.all(
        [redis, ingestRedis, jobRedis].map((r) =>
          r.status === "ready"
            ? undefined
            : new Promise<void>((resolve) => r.once("ready", () => resolve())),
        ),
      );
    },
    async close() {
      await queues.close();
      redis.disconnect();
      ingestRedis.disconnect();
      jobRedis.disconnect();
      db.$client.close();
    },
  };
}
