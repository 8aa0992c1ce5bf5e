import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import type { Job } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Connector, createConnector } from "../../src/app/connector.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { createSyncProcessor } from "../../src/engine/sync-processor.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

// What one synced one-line order costs outside the queue: the Redis commands of the sync
// processor (the limiter's scripts, the snapshot; commands inside scripts counted, as
// bench:worker counts them) on a redis-server of this file's own, so nothing else is counted,
// and the statements it sends to Postgres (BEGIN and COMMIT not counted, as bench:worker's
// pg_stat_statements figure). The queue's own commands (BullMQ's) are not the processor's.

// A store per database: the sandbox counts every request to a store, and a second ledger's
// requests to the same store would be another client's to this one.
const STORES = { sqlite: 2001, postgres: 2002 } as const;
const shopOf = (store: number) => `work-${store}.myshopify.com`;
const ORDERS = 20;

let redisServer: RedisServerHandle;
let redis: Redis;
let sandbox: SandboxHandle;
let dir: string;

beforeAll(async () => {
  redisServer = await startRedisServer();
  redis = new Redis(redisServer.url);
  sandbox = await startSandbox({
    stores: Object.values(STORES),
    rateLimit: 1_000_000,
    windowMs: 60_000,
  });
  dir = mkdtempSync(join(tmpdir(), "work-per-job-"));
});
afterAll(async () => {
  redis.disconnect();
  await sandbox.close();
  await redisServer.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Statements sent by every pg client of this process while `counting`. */
let counting = false;
let statements = 0;
const query = pg.Client.prototype.query;
beforeAll(() => {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === "string" ? first : first?.text;
    if (counting && text && !/^\s*(BEGIN|COMMIT|ROLLBACK)\s*$/i.test(text)) statements++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
});
afterAll(() => {
  pg.Client.prototype.query = query;
});

async function context(
  database: Record<string, string>,
  prefix: string,
  store: number,
): Promise<Connector> {
  const ctx = createConnector({
    config: resolveRuntimeConfig(
      parseEnv({ ...database, LOG_LEVEL: "silent", PROVIDER_RATE_LIMIT: "1000000" }),
    ),
    logger: createLogger("silent"),
    redis: redisServer.url,
    prefix,
    providerDefaults: {
      baseUrl: sandbox.url,
      authUrl: sandbox.authUrl,
      audience: sandbox.audience,
    },
  });
  await ctx.ready();
  const shop = shopOf(store);
  await ctx.shops.upsertShop(shop, {
    storeId: store,
    providerClientId: sandbox.clientId,
    providerClientSecretSealed: ctx.secrets.seal(
      sandbox.clientSecret,
      sealedFor.providerClientSecret(shop),
    ),
    storeCurrency: "USD",
  });
  return ctx;
}

/** Commands Redis ran, those inside Lua scripts included, by name. */
async function commandsByName(): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  return new Map(
    [...info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)].map((m) => [m[1] as string, Number(m[2])]),
  );
}

/**
 * Syncs one order to warm up (token, the store's budget learned, statements prepared), then
 * ORDERS one-line orders one after another: the processor's Redis commands and database
 * statements per order.
 */
async function perOrder(ctx: Connector, store: number, firstId: number) {
  const process = createSyncProcessor({
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    shops: ctx.shops,
    links: ctx.links,
    limiter: ctx.limiter,
    providerFor: (shop) => ctx.providers.for(shop),
    logger: createLogger("silent"),
  });
  const jobs: Job<SyncJobData>[] = [];
  for (let i = 0; i <= ORDERS; i++) {
    const order = sourceOrder({
      shop: shopOf(store) as ShopDomain,
      id: String(firstId + i) as ShopifyOrderId,
    });
    await ctx.snapshots.storeOrder(order);
    const data: SyncJobData = {
      shop: order.shop,
      orderId: order.id,
      priority: "live",
      trigger: "orders/create",
      receivedAt: Date.now(),
    };
    jobs.push((await ctx.queues.enqueueSync(data)) as Job<SyncJobData>);
  }
  const [warmUp, ...measured] = jobs;
  expect((await process(warmUp as Job<SyncJobData>)).outcome).toBe("synced");
  const before = await commandsByName();
  statements = 0;
  counting = true;
  try {
    for (const job of measured) expect((await process(job)).outcome).toBe("synced");
  } finally {
    counting = false;
  }
  const after = await commandsByName();
  // The INFO call that reads the count is itself counted once.
  after.set("info", (after.get("info") ?? 0) - 1);
  const byName = Object.fromEntries(
    [...after]
      .map(([name, n]) => [name, (n - (before.get(name) ?? 0)) / ORDERS] as const)
      .filter(([, n]) => n > 0),
  );
  const redisCommands = Object.values(byName).reduce((sum, n) => sum + n, 0);
  return { redis: redisCommands, statements: statements / ORDERS, byName };
}

describe("the work of one synced one-line order, outside the queue", () => {
  it("SQLite: at most 26 Redis commands (38 before the limiter kept its state in one hash)", async () => {
    const ctx = await context(
      { DATABASE_PATH: join(dir, "links.sqlite") },
      "work-sqlite",
      STORES.sqlite,
    );
    try {
      const cost = await perOrder(ctx, STORES.sqlite, 80_000_000);
      console.log(`SQLite, per synced one-line order: ${JSON.stringify(cost)}`);
      expect(cost.redis).toBeLessThanOrEqual(26);
    } finally {
      await ctx.close();
    }
  });

  it("Postgres: at most 7 statements (15, then 8 before) and 26 Redis commands", async () => {
    const url = await createTestDatabase(service("postgresUrl"));
    const ctx = await context({ DATABASE_URL: url }, "work-postgres", STORES.postgres);
    try {
      const cost = await perOrder(ctx, STORES.postgres, 81_000_000);
      console.log(`Postgres, per synced one-line order: ${JSON.stringify(cost)}`);
      // The create's order link and line-item links in one statement (8 when one each).
      expect(cost.statements).toBeLessThanOrEqual(7);
      expect(cost.redis).toBeLessThanOrEqual(26);
    } finally {
      await ctx.close();
    }
  });
});
