import { type Job, Worker } from "bullmq";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  CheckpointRepository,
  createSweepProcessor,
  LOST_LOOKBACK_MS,
  OWED_HOLD_MAX_MS,
  RedisLossMarks,
  SWEEP_JOB,
  type SweepDeps,
  type SweepJobData,
  type SweepResult,
  SweepScheduler,
  sweepShop,
} from "../../src/backfill/index.ts";
import { startSweepWorker } from "../../src/jobs/sweep-worker.ts";
import { startSyncWorker } from "../../src/jobs/sync-worker.ts";
import { duplicateConnection } from "../../src/lib/redis-keys.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import type { ShopRecord } from "../../src/store/index.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { loseRedisData } from "../helpers/redis-loss.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";
import { AMPLE_BUDGET, standInOrder } from "../helpers/standin-orders.ts";

let pipeline: Pipeline;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await pipeline?.close();
});

const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();

function sweepDeps(): SweepDeps {
  const { ctx } = pipeline;
  return {
    shops: ctx.shops,
    links: ctx.links,
    checkpoints: new CheckpointRepository(ctx.db),
    shopifyAdmin: ctx.shopifyAdmin,
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    limiter: ctx.limiter,
    logger: ctx.logger,
  };
}

const shopRecord = async () => (await pipeline.ctx.shops.getShop(TEST_SHOP)) as ShopRecord;

describe("reconciliation sweep", () => {
  it("heals an order whose webhooks were never delivered, and an update that was missed", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    // Order 1 arrives by webhook; order 2's webhook never comes.
    const one = standInOrder(1, iso(10 * 60_000));
    const two = standInOrder(2, iso(9 * 60_000));
    const delivered = await pipeline.shopify.upsertOrder(TEST_SHOP, one.payload);
    expect(delivered.map((d) => d.status)).toEqual([200]);
    await pipeline.shopify.upsertOrder(TEST_SHOP, two.payload, { deliver: false });
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.all.map((o) => o.sourceOrderId)).toEqual(["1"]);

    // Order 1 is then edited in Shopify and that webhook is lost too.
    const edited = orderPayload({ ...one.model, updatedAt: iso(5 * 60_000), note: "gift wrap" });
    await pipeline.shopify.upsertOrder(TEST_SHOP, edited, { deliver: false });

    const result = await sweepShop(sweepDeps(), await shopRecord());
    expect(result).toMatchObject({ checked: 2, queued: 2 });
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.find(1001, "2")?.orderName).toBe("#1002");
    expect(pipeline.sandbox.state.orders.find(1001, "1")?.notes).toBe("gift wrap");

    // Nothing is left to heal: a second sweep reads the versions and queues nothing.
    const again = await sweepShop(sweepDeps(), await shopRecord());
    expect(again.queued).toBe(0);
    expect(await new CheckpointRepository(pipeline.ctx.db).get(TEST_SHOP)).not.toBeNull();
  });

  it("finds an order again whose job was lost before it ran, however long the backlog lasted", async () => {
    // No sync worker: what is queued waits, as in a backlog.
    pipeline = await startPipeline({ ...AMPLE_BUDGET, workers: 0 });
    const owed = standInOrder(3, iso(30 * 60_000));
    await pipeline.shopify.upsertOrder(TEST_SHOP, owed.payload, { deliver: false });
    const checkpoints = new CheckpointRepository(pipeline.ctx.db);
    expect(await sweepShop(sweepDeps(), await shopRecord())).toMatchObject({ queued: 1 });
    // The checkpoint stays at the order it found owed, not at the sweep's start.
    expect(await checkpoints.get(TEST_SHOP)).toBe(owed.model.updatedAt);
    // While its job waits, a sweep neither reads it from Shopify again nor lets it go.
    const reads = pipeline.shopify.state.counters.graphqlRequests;
    expect(await sweepShop(sweepDeps(), await shopRecord())).toMatchObject({ queued: 0 });
    expect(await checkpoints.get(TEST_SHOP)).toBe(owed.model.updatedAt);
    // One page of versions, no order read in full.
    expect(pipeline.shopify.state.counters.graphqlRequests - reads).toBe(1);

    // Redis comes back empty: the job is gone before it ran. An hour later, the sweep finds
    // the order again (before, it read only the last sweep's 15 minutes and found nothing).
    await pipeline.ctx.queues.sync.obliterate({ force: true });
    const later = Date.now() + 3_600_000;
    expect(await sweepShop(sweepDeps(), await shopRecord(), later)).toMatchObject({ queued: 1 });

    // Once the provider has it, the checkpoint moves on.
    const worker = startSyncWorker(pipeline.ctx, { concurrency: 4 });
    try {
      await pipeline.drain();
    } finally {
      await worker.close();
    }
    expect(pipeline.sandbox.state.orders.all.map((o) => o.sourceOrderId)).toEqual(["3"]);
    expect(await sweepShop(sweepDeps(), await shopRecord(), later)).toMatchObject({ queued: 0 });
    expect(await checkpoints.get(TEST_SHOP)).toBe(new Date(later).toISOString());

    // An order owed for days is stuck rather than late: it holds the checkpoint a day back at
    // most, so the sweep's window does not grow for ever.
    const stuck = standInOrder(4, new Date(later).toISOString());
    await pipeline.shopify.upsertOrder(TEST_SHOP, stuck.payload, { deliver: false });
    const days = later + 3 * 86_400_000;
    expect(await sweepShop(sweepDeps(), await shopRecord(), later)).toMatchObject({ queued: 1 });
    await sweepShop(sweepDeps(), await shopRecord(), days);
    expect(await checkpoints.get(TEST_SHOP)).toBe(new Date(days - OWED_HOLD_MAX_MS).toISOString());
  });

  it("reads a week back once after Redis lost its data, for the orders of a backlog it lost", async () => {
    // No sync worker: what is queued waits, as in a backlog.
    pipeline = await startPipeline({ ...AMPLE_BUDGET, workers: 0 });
    const logs = captureLogs("sweep-loss");
    closers.push(async () => logs.remove());
    const checkpoints = new CheckpointRepository(pipeline.ctx.db);
    const lossMarks = new RedisLossMarks(pipeline.ctx.redis, pipeline.ctx.prefix);
    const sweep = createSweepProcessor({
      ...sweepDeps(),
      lossMarks,
      logger: pino({ level: "info" }, logs.destination),
    });
    const run = () =>
      sweep({ id: "sweep-1", name: SWEEP_JOB, data: { shop: TEST_SHOP } } as Job<SweepJobData>);
    // Owed for three days: its job waited in a backlog, and past a day it stopped holding the
    // checkpoint, which the sweeps since moved on to an hour ago.
    const owed = standInOrder(7, iso(3 * 86_400_000));
    await pipeline.shopify.upsertOrder(TEST_SHOP, owed.payload, { deliver: false });
    await checkpoints.set(TEST_SHOP, iso(3_600_000));
    await lossMarks.keep(TEST_SHOP);
    expect(await run()).toMatchObject({ queued: 0 });

    // Redis comes back empty, the order's job with it: the next sweep reads a week back, once.
    await loseRedisData(pipeline.ctx.redis, pipeline.ctx.prefix);
    const result = await run();
    expect(result).toMatchObject({ queued: 1 });
    expect(Date.parse((result as SweepResult).since)).toBeLessThanOrEqual(
      Date.now() - LOST_LOOKBACK_MS + 60_000,
    );
    const queue = await pipeline.ctx.queues.syncQueueFor(TEST_SHOP, "7");
    expect(await pipeline.ctx.queues.hasPendingJob(queue, TEST_SHOP, "7")).toBe(true);
    expect(logs.read()).toContain("Redis holds nothing of the shop since its last sweep");
    const since = (await run()) as SweepResult;
    expect(Date.parse(since.since)).toBeGreaterThan(Date.now() - 2 * 86_400_000);
  });

  it("leaves kept-out orders alone until Shopify changes them, and sends one that gains an address", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    const { shopify } = pipeline;
    // A test order (the shop's setting is off) and a walk-in sale at the counter, both by webhook.
    const test = { ...standInOrder(5, iso(2 * 60_000)).payload, test: true };
    const sale = standInOrder(6, iso(60_000), { email: null, shippingCents: 0 });
    const counter = {
      ...sale.payload,
      source_name: "pos",
      customer: null,
      shipping_lines: [],
      shipping_address: null,
      billing_address: null,
    };
    await shopify.upsertOrder(TEST_SHOP, test);
    await shopify.upsertOrder(TEST_SHOP, counter);
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.all).toHaveLength(0);
    expect(await pipeline.ctx.shops.countKeptOut(TEST_SHOP, "test")).toBe(1);
    expect(await pipeline.ctx.shops.countKeptOut(TEST_SHOP, "no-address")).toBe(1);

    // Sweep after sweep (each looks back over the last one), neither is read again nor queued:
    // one Admin call, the page of versions.
    for (const _ of [1, 2]) {
      const admin = shopify.state.counters.graphqlRequests;
      const result = await sweepShop(sweepDeps(), await shopRecord());
      expect(result).toMatchObject({ checked: 2, queued: 0 });
      expect(shopify.state.counters.graphqlRequests - admin).toBe(1);
    }

    // The merchant adds the customer's address to the sale and that webhook is lost: the sweep
    // sees a newer version, reads it and sends it. The test order is still left alone.
    const edited = orderPayload({ ...sale.model, email: "walkin@example.com", updatedAt: iso(0) });
    await shopify.upsertOrder(
      TEST_SHOP,
      { ...edited, source_name: "pos", shipping_lines: [] },
      { deliver: false },
    );
    const result = await sweepShop(sweepDeps(), await shopRecord());
    expect(result).toMatchObject({ checked: 2, queued: 1 });
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.all.map((o) => o.sourceOrderId)).toEqual(["6"]);

    // Once the shop sends test orders, the sweep sends the one it kept out.
    await pipeline.ctx.shops.updateSettings(TEST_SHOP, { sendTestOrders: true });
    expect(await sweepShop(sweepDeps(), await shopRecord())).toMatchObject({ queued: 1 });
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.find(1001, "5")?.orderName).toBe("#1005");
  });

  it("runs on its own from the shop's job scheduler", async () => {
    pipeline = await startPipeline({
      sandbox: AMPLE_BUDGET.sandbox,
      env: { ...AMPLE_BUDGET.env, RECONCILE_INTERVAL_MS: "200" },
    });
    await pipeline.shopify.upsertOrder(TEST_SHOP, standInOrder(3, iso(60_000)).payload, {
      deliver: false,
    });
    const { ctx } = pipeline;
    const scheduler = new SweepScheduler(ctx.redis, ctx.prefix, 200);
    closers.push(
      () => scheduler.queue.obliterate({ force: true }),
      () => scheduler.close(),
    );
    await scheduler.scheduleAll(ctx.shops);
    const schedulers = await scheduler.queue.getJobSchedulers();
    expect(schedulers.map((s) => s.key)).toEqual([`sweep-${TEST_SHOP}`]);

    const worker = new Worker(QUEUE.maintenance, createSweepProcessor(sweepDeps()), {
      ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
    });
    closers.push(() => worker.close());
    const deadline = Date.now() + 20_000;
    while (!pipeline.sandbox.state.orders.find(1001, "3")) {
      if (Date.now() > deadline) throw new Error("the scheduled sweep never synced the order");
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(pipeline.sandbox.state.orders.find(1001, "3")?.orderName).toBe("#1003");
  });

  it("counts per provider store the orders it read and those whose webhooks never came", async () => {
    pipeline = await startPipeline({
      sandbox: AMPLE_BUDGET.sandbox,
      env: { ...AMPLE_BUDGET.env, RECONCILE_INTERVAL_MS: "200" },
    });
    await pipeline.shopify.upsertOrder(TEST_SHOP, standInOrder(4, iso(60_000)).payload, {
      deliver: false,
    });
    // The worker role's sweep worker, as `startWorkerRole` starts it on the connector.
    const sweeps = await startSweepWorker(pipeline.ctx);
    closers.push(
      () => sweeps.scheduler.queue.obliterate({ force: true }),
      () => sweeps.close(),
    );
    const { metrics } = pipeline.ctx;
    const missed = async () =>
      (await metrics.sweepMissed.get()).values.find((v) => v.labels.store === "1001")?.value;
    await expect.poll(missed, { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
    expect(
      (await metrics.sweepChecked.get()).values.find((v) => v.labels.store === "1001")?.value,
    ).toBeGreaterThanOrEqual(1);
  });

  it("keeps one scheduler per connected shop as shops are installed and uninstalled", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    const { ctx } = pipeline;
    const scheduler = new SweepScheduler(ctx.redis, ctx.prefix, 60_000);
    closers.push(
      () => scheduler.queue.obliterate({ force: true }),
      () => scheduler.close(),
    );
    const keys = async () => (await scheduler.queue.getJobSchedulers()).map((s) => s.key).sort();

    await scheduler.scheduleAll(ctx.shops);
    const first = await scheduler.queue.getJobScheduler(`sweep-${TEST_SHOP}`);
    await ctx.shops.upsertShop("second-shop.myshopify.com", {
      accessTokenSealed: ctx.secrets.seal(
        "shpat_second",
        sealedFor.shopifyAccessToken("second-shop.myshopify.com"),
      ),
    });
    await ctx.shops.upsertShop("no-token-shop.myshopify.com", {});
    await scheduler.scheduleAll(ctx.shops);
    expect(await keys()).toEqual([`sweep-${TEST_SHOP}`, "sweep-second-shop.myshopify.com"]);
    // The existing shop's next sweep was not pushed back.
    expect((await scheduler.queue.getJobScheduler(`sweep-${TEST_SHOP}`))?.next).toBe(first?.next);

    await ctx.shops.setStatus(TEST_SHOP, "uninstalled");
    await scheduler.scheduleAll(ctx.shops);
    expect(await keys()).toEqual(["sweep-second-shop.myshopify.com"]);
  });
});
