import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Job, Worker } from "bullmq";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { StoreRateLimiter } from "../../src/engine/limiter/index.ts";
import { createSyncProcessor, type SyncProcessorDeps } from "../../src/engine/sync-processor.ts";
import { SnapshotStore } from "../../src/ingest/snapshot-store.ts";
import { ConnectorMetrics } from "../../src/metrics/index.ts";
import type { OrderCreate } from "../../src/provider/index.ts";
import {
  type Order,
  ProviderNotFoundError,
  ProviderServerError,
  ProviderValidationError,
} from "../../src/provider/index.ts";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import { OrderQueues } from "../../src/queue/order-queues.ts";
import {
  createLinkRepository,
  type Db,
  type LinkRepository,
  openDatabase,
  ShopRepository,
  type ShopSettingsInput,
} from "../../src/store/index.ts";
import type { ShopifyOrderId } from "../../src/sync/source-order.ts";
import { ScriptedProvider } from "../helpers/scripted-provider.ts";
import { service } from "../helpers/services.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

// The sync processor's branches, one at a time, through its narrow deps: the real snapshot
// store, queues and limiter on the test run's Redis, the real link and shop repositories on a
// throwaway SQLite file, and a provider whose every answer is scripted. Each test names the
// branch it takes; the integration and chaos suites run the whole pipeline.

const SHOP = "demo-shop.myshopify.com";
const at = (method: string, path: string) => ({ method, path });

/** The provider's answer to a create: the body with service IDs. */
const created = (orderId: number) => (body: OrderCreate) =>
  ({
    ...body,
    orderId,
    lineItems: body.lineItems.map((line, i) => ({ ...line, orderId, lineItemId: 9000 + i })),
  }) as Order;

let redis: Redis;
let dir: string;
let db: Db;
let deps: SyncProcessorDeps;
let provider: ScriptedProvider;
let shops: ShopRepository;
let links: LinkRepository;
let queues: OrderQueues;
let snapshots: SnapshotStore;

beforeAll(() => {
  redis = new Redis(service("redisUrl"));
});
afterAll(() => {
  redis.disconnect();
});

beforeEach(() => {
  const prefix = `proc-${randomUUID()}`;
  dir = mkdtempSync(join(tmpdir(), "sync-processor-"));
  db = openDatabase(join(dir, "links.sqlite"));
  shops = new ShopRepository(db);
  links = createLinkRepository(db);
  queues = new OrderQueues(redis, prefix, { attempts: 3 });
  snapshots = new SnapshotStore(redis, { prefix });
  provider = new ScriptedProvider();
  deps = {
    snapshots,
    queues,
    shops,
    links,
    limiter: new StoreRateLimiter(redis, {
      limit: 1_000,
      windowMs: 60_000,
      paceBulk: true,
      liveSlowStart: true,
      prefix,
    }),
    providerFor: () => provider.client,
    logger: pino({ level: "silent" }),
  };
});

afterEach(async () => {
  await queues.close();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

async function registerShop(settings: Partial<ShopSettingsInput> = {}) {
  await shops.upsertShop(SHOP, {
    storeId: 1001,
    storeCurrency: "USD",
    locationMap: { "4001": 77 },
    installedAt: new Date().toISOString(),
    ...settings,
  });
}

/** Queues a job for the order and runs the processor on it once, as a worker would. */
async function run(orderId = "5001", attempt = 0): Promise<ReturnType<typeof process>> {
  const data: SyncJobData = {
    shop: SHOP,
    orderId,
    priority: "live",
    trigger: "orders/create",
    receivedAt: Date.now(),
  };
  const job = (await queues.enqueueSync(data)) as Job<SyncJobData>;
  job.attemptsMade = attempt;
  return process(job);
}
const process = (job: Job<SyncJobData>) => createSyncProcessor(deps)(job);

describe("sync processor: before any provider call", () => {
  it("skips the job of a shop it does not know", async () => {
    expect(await run()).toEqual({ outcome: "skipped", reason: "shop unknown" });
  });

  it("skips the job of an uninstalled shop", async () => {
    await registerShop();
    await shops.setStatus(SHOP, "uninstalled");
    expect(await run()).toEqual({ outcome: "skipped", reason: "shop uninstalled" });
  });

  it("waits, and calls nothing, while no full order state is stored", async () => {
    await registerShop();
    expect((await run()).outcome).toBe("waiting");
    expect(provider.calls).toEqual([]);
  });

  it("keeps a test order out of the provider unless the shop asks, and counts it", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder({ test: true }));
    expect((await run()).outcome).toBe("skipped");
    expect(await shops.countKeptOut(SHOP, "test")).toBe(1);
    expect(provider.calls).toEqual([]);
  });

  it("dead-letters a paused shop's order as a settings problem", async () => {
    const metrics = new ConnectorMetrics();
    deps.metrics = metrics.sync;
    await registerShop();
    await shops.setStatus(SHOP, "paused", "reinstall needed");
    await snapshots.storeOrder(sourceOrder());
    const result = await run();
    expect(result.outcome).toBe("dead-lettered");
    const [dead] = await queues.deadLetter.getJobs();
    expect(dead?.data).toMatchObject({ category: "config", orderId: "5001" });
    expect((await links.latestFailures(SHOP, 1))[0]?.failure?.category).toBe("config");
    // Counted by its reason, for the dashboard and the "dead letters growing" alert.
    expect((await metrics.deadLetters.get()).values).toEqual([
      { labels: { reason: "config" }, value: 1 },
    ]);
  });

  it("records a currency the provider store does not keep with the field it names", async () => {
    await registerShop({ storeCurrency: "EUR" });
    await snapshots.storeOrder(sourceOrder());
    expect((await run()).outcome).toBe("dead-lettered");
    expect((await links.latestFailures(SHOP, 1))[0]?.failure).toMatchObject({
      category: "config",
      fields: [{ path: "currency" }],
    });
    expect(provider.calls).toEqual([]);
  });
});

describe("sync processor: calls", () => {
  it("creates the order once, then finds nothing more to send", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder());
    provider.answer("createOrder", created(501));
    expect(await run()).toEqual({ outcome: "synced", calls: 1 });
    expect(await run()).toEqual({ outcome: "unchanged" });
    expect(provider.called("createOrder")).toBe(1);
    expect((await links.loadLinks(SHOP, "5001"))?.syncedVersion).toBe(sourceOrder().updatedAt);
  });

  it("sends only the update when the order changed after it was created", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder());
    provider.answer("createOrder", created(501));
    await run();
    await snapshots.storeOrder(
      sourceOrder({ updatedAt: "2026-11-02T10:00:00-05:00", note: "leave at the door" }),
    );
    provider.answer("updateOrder", (_store: number, orderId: number, body: object) => ({
      ...created(501)(
        // The provider answers with the whole order as it now is.
        { ...(provider.calls[0]?.args[0] as OrderCreate), ...body },
      ),
      orderId,
    }));
    expect(await run()).toEqual({ outcome: "synced", calls: 1 });
    expect(provider.calls.map((c) => c.method)).toEqual(["createOrder", "updateOrder"]);
  });

  it("retires a link the provider answers 404 for and adopts the order it finds again", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder());
    provider.answer("createOrder", created(501));
    await run();
    await snapshots.storeOrder(
      sourceOrder({ updatedAt: "2026-11-02T10:00:00-05:00", note: "leave at the door" }),
    );
    const gone = new ProviderNotFoundError("gone", { ...at("POST", "/orders/501"), status: 404 });
    const original = provider.calls[0]?.args[0] as OrderCreate;
    provider
      .answer("updateOrder", gone)
      .answer("findOrderBySourceId", null)
      .answer("createOrder", created(640));
    const result = await run();
    expect(result.outcome).toBe("synced");
    expect((await links.loadLinks(SHOP, "5001"))?.orderId).toBe(640);
    expect(original.sourceOrderId).toBe("5001");
  });

  it("dead-letters a provider refusal at once, with the fields it named", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder());
    provider.answer(
      "createOrder",
      new ProviderValidationError("refused", {
        ...at("POST", "/orders"),
        status: 400,
        fields: [{ path: "customer.email", message: "refused by the provider" }],
      }),
    );
    expect((await run()).outcome).toBe("dead-lettered");
    expect((await links.latestFailures(SHOP, 1))[0]?.failure).toMatchObject({
      category: "provider-validation",
      fields: [{ path: "customer.email" }],
    });
  });

  it("leaves a transient failure to the queue's retry while attempts remain", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder());
    const down = new ProviderServerError("503", { ...at("POST", "/orders"), status: 503 });
    provider.answer("createOrder", down);
    await expect(run("5001", 0)).rejects.toBe(down);
    expect(await queues.deadLetter.getJobs()).toEqual([]);
  });

  it("dead-letters a transient failure on the last attempt as exhausted", async () => {
    await registerShop();
    await snapshots.storeOrder(sourceOrder());
    provider.answer(
      "createOrder",
      new ProviderServerError("503", { ...at("POST", "/orders"), status: 503 }),
    );
    expect((await run("5001", 2)).outcome).toBe("dead-lettered");
    const [dead] = await queues.deadLetter.getJobs();
    expect(dead?.data.category).toBe("exhausted");
  });
});

describe("sync processor: waiting for a slot", () => {
  it("sends a live job the limiter handed back ahead of live jobs it has not read yet", async () => {
    // One request per window: the first order takes the slot, the second is handed back to
    // the queue until the slot frees. Three more orders arrive meanwhile. When the slot frees,
    // the order that waited for it goes first, not behind the three (a burst's next round
    // would otherwise wait for every order of the burst still to be read, its slots unused).
    const prefix = `proc-wait-${randomUUID()}`;
    // The queue and the limiter read the same budget, as they do from the configuration.
    const waitQueues = new OrderQueues(
      redis,
      prefix,
      { attempts: 3 },
      { liveShare: { limit: 1, windowMs: 600 } },
    );
    // Slow start off (LIMITER_LIVE_SLOW_START=false): the first order does not go alone and
    // hold the others for its answer, so the line under test is the window's only.
    const limiter = new StoreRateLimiter(redis, {
      limit: 1,
      windowMs: 600,
      paceBulk: true,
      liveSlowStart: false,
      prefix,
    });
    await registerShop();
    for (const id of ["1", "2", "3", "4", "5"])
      await snapshots.storeOrder(sourceOrder({ id: id as ShopifyOrderId }));
    provider.answer("createOrder", ...[501, 502, 503, 504, 505].map(created));
    const processor = createSyncProcessor({ ...deps, queues: waitQueues, limiter });
    const seen: string[] = [];
    const connections: Redis[] = [];
    const startWorker = () => {
      const connection = new Redis(service("redisUrl"), { maxRetriesPerRequest: null });
      connections.push(connection);
      return new Worker<SyncJobData>(
        QUEUE.sync,
        async (job, token) => {
          seen.push(job.data.orderId);
          return processor(job, token);
        },
        { ...queueOptions(connection, prefix), concurrency: 1 },
      );
    };
    const enqueue = (orderId: string) =>
      waitQueues.enqueueSync({
        shop: SHOP,
        orderId,
        priority: "live",
        trigger: "orders/create",
        receivedAt: Date.now(),
      });
    try {
      await enqueue("1");
      await enqueue("2");
      let worker = startWorker();
      await expect.poll(() => waitQueues.sync.getDelayedCount(), { timeout: 5_000 }).toBe(1);
      await worker.close();
      for (const id of ["3", "4", "5"]) await enqueue(id);
      // The slot frees a window after its grant (and the margin): the waiting job is due.
      await new Promise((r) => setTimeout(r, 900));
      seen.length = 0;
      worker = startWorker();
      await expect.poll(() => seen.length, { timeout: 5_000 }).toBeGreaterThan(0);
      await worker.close();
      expect(seen[0]).toBe("2");
    } finally {
      await waitQueues.close();
      for (const c of connections) c.disconnect();
    }
  });
});
