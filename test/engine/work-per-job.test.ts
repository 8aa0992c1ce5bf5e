import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
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
import { loadLua } from "../../src/lib/lua.ts";
import { type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { createTestDatabase, onSocketWrites } from "../helpers/postgres.ts";
import { monitorRedis } from "../helpers/redis-monitor.ts";
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

/**
 * Statements sent by every pg client of this process while `counting`, and its connections'
 * socket writes (a round trip starts with one).
 */
let counting = false;
let statements = 0;
let socketWrites = 0;
const query = pg.Client.prototype.query;
beforeAll(() => {
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === "string" ? first : first?.text;
    onSocketWrites(this, () => {
      if (counting) socketWrites++;
    });
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

/** The limiter's scripts by the SHA1 EVALSHA names them with. */
const LIMITER_LUA = new URL("../../src/engine/limiter/lua/", import.meta.url);
const SCRIPT_NAMES = new Map(
  readdirSync(LIMITER_LUA)
    .filter((file) => file.endsWith(".lua"))
    .map((file) => {
      const name = file.replace(/\.lua$/, "");
      const { lua } = loadLua(LIMITER_LUA, name);
      return [createHash("sha1").update(lua).digest("hex"), name.replace(/-\d+$/, "")] as const;
    }),
);

/**
 * Redis's own log of commands (MONITOR) from now until `stop`, by origin: each script call with
 * the commands it ran (the limiter's scripts by name), and each command sent outside a script
 * (INFO, which reads the counts, left out).
 */
async function watchOrigins(): Promise<{ stop(): Promise<Record<string, string[]>> }> {
  const calls: { origin: string; commands: string[] }[] = [];
  let ended = false;
  const END = "work-per-job:end";
  const monitor = await monitorRedis(redisServer.url, ({ args, source }) => {
    const name = (args[0] ?? "").toLowerCase();
    if (name === "echo" && args[1] === END) ended = true;
    else if (source === "lua") calls.at(-1)?.commands.push(name);
    else if (name === "evalsha" || name === "eval") {
      const sha =
        name === "eval"
          ? createHash("sha1")
              .update(args[1] ?? "")
              .digest("hex")
          : args[1];
      const origin = SCRIPT_NAMES.get(sha ?? "") ?? `script ${sha?.slice(0, 8)}`;
      calls.push({ origin, commands: [name] });
    } else if (name !== "info") calls.push({ origin: name, commands: [name] });
  });
  return {
    async stop() {
      try {
        await redis.echo(END);
        await expect.poll(() => ended).toBe(true);
      } finally {
        monitor.stop();
      }
      const byOrigin: Record<string, string[]> = {};
      for (const { origin, commands } of calls) {
        byOrigin[origin] = [...(byOrigin[origin] ?? []), ...commands];
      }
      return byOrigin;
    },
  };
}

/** Commands per order by origin, each with its commands by name. */
function perOrderByOrigin(byOrigin: Record<string, string[]>) {
  return Object.fromEntries(
    Object.entries(byOrigin).map(([origin, commands]) => {
      const names: Record<string, number> = {};
      for (const name of commands) names[name] = (names[name] ?? 0) + 1 / ORDERS;
      const round = (n: number) => Math.round(n * 100) / 100;
      return [
        origin,
        {
          total: round(commands.length / ORDERS),
          ...Object.fromEntries(Object.entries(names).map(([k, n]) => [k, round(n)])),
        },
      ];
    }),
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
  const origins = await watchOrigins();
  const before = await commandsByName();
  statements = 0;
  socketWrites = 0;
  counting = true;
  try {
    for (const job of measured) expect((await process(job)).outcome).toBe("synced");
  } finally {
    counting = false;
  }
  const after = await commandsByName();
  const byOrigin = perOrderByOrigin(await origins.stop());
  // The INFO call that reads the count is itself counted once.
  after.set("info", (after.get("info") ?? 0) - 1);
  const byName = Object.fromEntries(
    [...after]
      .map(([name, n]) => [name, (n - (before.get(name) ?? 0)) / ORDERS] as const)
      .filter(([, n]) => n > 0),
  );
  const redisCommands = Object.values(byName).reduce((sum, n) => sum + n, 0);
  return {
    redis: redisCommands,
    statements: statements / ORDERS,
    roundTrips: socketWrites / ORDERS,
    byName,
    byOrigin,
  };
}

/** The limiter's own commands per order: its two scripts, each with what it ran. */
function limiterCommands(cost: Awaited<ReturnType<typeof perOrder>>) {
  const total = (origin: string) =>
    (cost.byOrigin[origin] as { total: number } | undefined)?.total ?? 0;
  return { acquire: total("acquire"), answered: total("answered") };
}

describe("the work of one synced one-line order, outside the queue", () => {
  // The limiter's part: at most 13 (24 before it kept its requests in flight in one set and was
  // told its slot's grant and leaving, 36 before it kept its state in one hash).
  it("SQLite: at most 14 Redis commands, 13 of them the limiter's two scripts", async () => {
    const ctx = await context(
      { DATABASE_PATH: join(dir, "links.sqlite") },
      "work-sqlite",
      STORES.sqlite,
    );
    try {
      const cost = await perOrder(ctx, STORES.sqlite, 80_000_000);
      console.log(`SQLite, per synced one-line order: ${JSON.stringify(cost)}`);
      const limiter = limiterCommands(cost);
      expect(limiter.acquire + limiter.answered).toBeLessThanOrEqual(13);
      expect(cost.redis).toBeLessThanOrEqual(14);
    } finally {
      await ctx.close();
    }
  });

  it("Postgres: at most 7 statements (15, then 8 before) in 5 round trips, and 14 Redis commands", async () => {
    const url = await createTestDatabase(service("postgresUrl"));
    const ctx = await context({ DATABASE_URL: url }, "work-postgres", STORES.postgres);
    try {
      const cost = await perOrder(ctx, STORES.postgres, 81_000_000);
      console.log(`Postgres, per synced one-line order: ${JSON.stringify(cost)}`);
      // The create's order link and line-item links in one statement (8 when one each).
      expect(cost.statements).toBeLessThanOrEqual(7);
      // The shop with the order's state; the intent; the create's write in three (each of
      // them a round trip of its own before: 6).
      expect(cost.roundTrips).toBeLessThanOrEqual(5);
      expect(cost.redis).toBeLessThanOrEqual(14);
    } finally {
      await ctx.close();
    }
  });
});
