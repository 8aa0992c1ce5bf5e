import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SandboxHandle, type SandboxOptions, startSandbox } from "@connector/provider-sandbox";
import {
  type ShopInstallOptions,
  type ShopifyStandInHandle,
  startShopifyStandIn,
} from "@connector/shopify-standin";
import { type Connector, createConnector } from "../../src/app/connector.ts";
import { composeWebApp } from "../../src/app/web.ts";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { type BackfillWorkerHandle, startBackfillWorker } from "../../src/jobs/backfill-worker.ts";
import { type SyncWorkers, startSyncWorker } from "../../src/jobs/sync-worker.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import type { WebApp } from "../../src/server/app.ts";
import type { LinkRepository } from "../../src/store/index.ts";
import { pendingSyncJobs } from "./pending-jobs.ts";
import { createTestDatabase } from "./postgres.ts";
import { service } from "./services.ts";

export const TEST_SHOP = "lifecycle-shop.myshopify.com";
export const SHOPIFY_SECRET = "test-shopify-secret";
export const SHOPIFY_TOKEN = "shpat_pipeline_test_token";
/** The URI the stand-in Shopify's webhook subscriptions point at (handed to the web app). */
export const WEBHOOK_URI = "http://connector.test/webhooks/shopify";
/** The topics the stand-in sends for the test shop. */
const PIPELINE_TOPICS = ["ORDERS_CREATE", "ORDERS_UPDATED", "ORDERS_CANCELLED"];

export interface Pipeline {
  ctx: Connector;
  web: WebApp;
  sandbox: SandboxHandle;
  /** The stand-in Shopify: TEST_SHOP installed with SHOPIFY_TOKEN, webhooks to the web app. */
  shopify: ShopifyStandInHandle;
  workers: SyncWorkers[];
  send(
    topic: string,
    body: unknown,
    options?: { webhookId?: string; eventId?: string; shop?: string; triggeredAt?: string },
  ): Promise<Response>;
  drain(timeoutMs?: number): Promise<void>;
  /** Sync jobs waiting or running, over every shard of the sync queue. */
  pendingSyncJobs(): Promise<number>;
  /** Starts a backfill worker (closed with the pipeline unless closed before). */
  startBackfillWorker(): BackfillWorkerHandle;
  close(): Promise<void>;
}

export type RedisMode = "standalone" | "cluster";

/**
 * The deployments the end-to-end suites run on: the embedded one (SQLite, one Redis), SQLite on
 * a Redis Cluster, and the scale-out one (Postgres, Redis Cluster).
 */
export const DEPLOYMENTS = [
  { name: "SQLite, one Redis", redis: "standalone", database: "sqlite" },
  { name: "SQLite, Redis Cluster", redis: "cluster", database: "sqlite" },
  { name: "Postgres, Redis Cluster", redis: "cluster", database: "postgres" },
] as const satisfies { name: string; redis: RedisMode; database: "sqlite" | "postgres" }[];

export interface PipelineOptions {
  sandbox?: SandboxOptions;
  env?: Record<string, string>;
  workers?: number;
  /** Wraps the link repository, e.g. to inject crashes between a provider call and its link. */
  wrapLinks?: (links: LinkRepository) => LinkRepository;
  registerShop?: boolean;
  /** The test shop's Admin API bucket, scopes… in the stand-in Shopify. */
  shopify?: ShopInstallOptions & { throttledStatus?: 200 | 429 };
  /** One redis-server (the default), or the run's three-master Redis Cluster. */
  redis?: RedisMode;
  /** The link store: a SQLite file (the default), or a fresh database on the run's Postgres. */
  database?: "sqlite" | "postgres";
  /** Where the pipeline's pino logs go (a file, for log scans); silent when omitted. */
  logDestination?: import("pino").DestinationStream;
  /** The Redis key prefix (a fresh one when omitted): a second pipeline on it is a restart. */
  prefix?: string;
}

/** The whole pipeline in one process: receiver, real Redis, real SQLite, sandbox over HTTP. */
export async function startPipeline(options: PipelineOptions = {}): Promise<Pipeline> {
  const sandbox = await startSandbox({ stores: [1001], rateLimit: 100_000, ...options.sandbox });
  let deliverTo: WebApp | undefined;
  const { throttledStatus, ...install } = options.shopify ?? {};
  const shopify = await startShopifyStandIn({
    apiSecret: SHOPIFY_SECRET,
    ...(throttledStatus ? { throttledStatus } : {}),
    shops: [{ shop: TEST_SHOP, accessToken: SHOPIFY_TOKEN, restoreRate: 10_000, ...install }],
    // Webhooks go to the in-process web app, through its real HTTP handling.
    webhookFetch: async (input, init) => {
      if (!deliverTo) throw new Error("the pipeline's web app is not up");
      const url = new URL(input instanceof Request ? input.url : String(input));
      return deliverTo.app.request(`${url.pathname}${url.search}`, init);
    },
  });
  const standInShop = shopify.state.shop(TEST_SHOP);
  for (const topic of PIPELINE_TOPICS) {
    standInShop?.subscriptions.push({
      id: `gid://shopify/WebhookSubscription/${standInShop.nextId()}`,
      topic,
      uri: WEBHOOK_URI,
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    });
  }
  const dir = mkdtempSync(join(tmpdir(), "connector-test-"));
  const env = parseEnv({
    DATABASE_PATH: join(dir, "connector.sqlite"),
    SHOPIFY_API_SECRET: SHOPIFY_SECRET,
    SHOPIFY_ADMIN_URL: shopify.url,
    SYNC_RETRY_DELAY_MS: "50",
    LOG_LEVEL: options.logDestination ? "debug" : "silent",
    ...(options.redis === "cluster" ? { REDIS_CLUSTER_NODES: service("redisClusterNodes") } : {}),
    ...(options.database === "postgres"
      ? { DATABASE_URL: await createTestDatabase(service("postgresUrl")) }
      : {}),
    ...options.env,
  });
  const config = resolveRuntimeConfig(env);
  const ctx = createConnector({
    config,
    logger: createLogger(env.LOG_LEVEL, options.logDestination),
    redis: env.REDIS_CLUSTER_NODES ?? service("redisUrl"),
    prefix: options.prefix ?? `t-${randomUUID()}`,
    providerDefaults: {
      baseUrl: sandbox.url,
      authUrl: sandbox.authUrl,
      audience: sandbox.audience,
    },
  });
  await ctx.ready();
  if (options.wrapLinks) ctx.links = options.wrapLinks(ctx.links);
  if (options.registerShop !== false) {
    await ctx.shops.upsertShop(TEST_SHOP, {
      storeId: 1001,
      providerClientId: sandbox.clientId,
      providerClientSecretSealed: ctx.secrets.seal(
        sandbox.clientSecret,
        sealedFor.providerClientSecret(TEST_SHOP),
      ),
      storeCurrency: "USD",
      locationMap: { "4001": 77 },
      protectionVariantIds: ["999"],
      accessTokenSealed: ctx.secrets.seal(SHOPIFY_TOKEN, sealedFor.shopifyAccessToken(TEST_SHOP)),
    });
  }
  const web = composeWebApp(ctx);
  deliverTo = web;
  const workers = Array.from({ length: options.workers ?? 1 }, () =>
    startSyncWorker(ctx, { concurrency: 8 }),
  );

  const backfillWorkers: BackfillWorkerHandle[] = [];

  return {
    ctx,
    web,
    sandbox,
    shopify,
    workers,
    async send(topic, body, o = {}) {
      const signed = signWebhook({
        topic,
        shop: o.shop ?? TEST_SHOP,
        body: JSON.stringify(body),
        secret: SHOPIFY_SECRET,
        ...(o.webhookId ? { webhookId: o.webhookId } : {}),
        ...(o.eventId ? { eventId: o.eventId } : {}),
        ...(o.triggeredAt ? { triggeredAt: o.triggeredAt } : {}),
      });
      return web.app.request("/webhooks/shopify", {
        method: "POST",
        headers: signed.headers,
        body: signed.body,
      });
    },
    pendingSyncJobs: () => pendingSyncJobs(ctx.queues),
    async drain(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      let quiet = 0;
      while (Date.now() < deadline) {
        const busy = await pendingSyncJobs(ctx.queues);
        quiet = busy === 0 ? quiet + 1 : 0;
        if (quiet >= 3) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error("the sync queue did not drain in time");
    },
    startBackfillWorker() {
      const handle = startBackfillWorker(ctx);
      backfillWorkers.push(handle);
      return handle;
    },
    async close() {
      await Promise.all(backfillWorkers.map((w) => w.close()));
      await Promise.all(workers.map((w) => w.close()));
      await web.close();
      for (const queue of await ctx.queues.allSyncQueues().catch(() => [])) {
        await queue.obliterate({ force: true }).catch(() => {});
      }
      await ctx.close();
      await sandbox.close();
      await shopify.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
