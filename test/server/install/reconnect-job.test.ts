import { mintSessionToken } from "@connector/shopify-standin";
import { Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import {
  BackfillQueue,
  backfillJobId,
  createSweepProcessor,
  SweepScheduler,
} from "../../../src/backfill/index.ts";
import { duplicateConnection } from "../../../src/lib/redis-keys.ts";
import {
  type BulkRetryCounts,
  BulkRetryQueue,
  type BulkRetryView,
  RECONNECT_JOB,
} from "../../../src/ops/bulk-retry.ts";
import { RECONNECT_NET_TIMES } from "../../../src/ops/reconnect-net.ts";
import { configDeadLettersKey } from "../../../src/queue/dead-letter-record.ts";
import type { DeadLetterData } from "../../../src/queue/jobs.ts";
import { QUEUE, queueOptions } from "../../../src/queue/names.ts";
import { deadLetterId } from "../../../src/queue/order-queues.ts";
import { ShopifyTokenError } from "../../../src/shopify/admin-client.ts";
import { RECONNECT_NEEDED } from "../../../src/shopify/install/shop-tokens.ts";
import type { ShopDomain, ShopifyOrderId } from "../../../src/sync/source-order.ts";
import { captureLogs } from "../../helpers/captured-logs.ts";
import {
  APP_KEY,
  APP_SECRET,
  type InstallHarness,
  startInstallHarness,
  tokenRefusedDeadLetter,
} from "../../helpers/install-harness.ts";
import { monitorRedis } from "../../helpers/redis-monitor.ts";
import { service } from "../../helpers/services.ts";
import { sourceOrder } from "../../helpers/source-order-factory.ts";

/**
 * A shop paused because Shopify refused its token gets a new one when the merchant opens the
 * app: what waited for it (the paused backfill, the orders dead-lettered by the refusal, the
 * claims' order tags) is one job on the maintenance queue, which the web process only queues
 * and the worker role runs, over real HTTP (the stand-in Shopify, the provider sandbox) with a
 * real Redis and SQLite file.
 */
const SHOP = "reconnect-shop.myshopify.com";
const HOST = Buffer.from("admin.shopify.com/store/reconnect-shop").toString("base64");
const KEYS = { apiKey: APP_KEY, apiSecret: APP_SECRET };
const PROVIDER = { clientId: "reconnect-client", clientSecret: "reconnect-secret-1" };
/** Enough entries for the job to be stopped in the middle (8 are retried at a time). */
const ENTRIES = 300;

let h: InstallHarness | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await h?.close();
  h = undefined;
  logs?.remove();
  logs = undefined;
});

function jobs(harness: InstallHarness) {
  const queue = new BulkRetryQueue(harness.ctx.redis, harness.ctx.prefix);
  closers.push(() => queue.close());
  return {
    /** The reconnect jobs in the maintenance queue, whatever their state. */
    async reconnects() {
      const all = await queue.queue.getJobs([
        "waiting",
        "prioritized",
        "delayed",
        "active",
        "completed",
        "failed",
      ]);
      return all.filter((j) => j.name === RECONNECT_JOB);
    },
    view: (id: string) => queue.view(id),
    async finished(id: string): Promise<BulkRetryView> {
      let view: BulkRetryView | null = null;
      await expect
        .poll(
          async () => {
            view = await queue.view(id);
            return view?.finished;
          },
          { timeout: 60_000 },
        )
        .toBe(true);
      if (!view) throw new Error("no job");
      return view;
    },
  };
}

/**
 * A configured shop whose install's own job (nothing waited yet) has run, then `count` orders
 * dead-lettered because Shopify refused its token, two entries of other causes, a backfill
 * paused at its cursor, and the shop paused "reconnect needed".
 */
async function pausedShop(count: number) {
  logs = captureLogs("reconnect-job");
  const harness = await startInstallHarness({
    provider: { ...PROVIDER, stores: [1001] },
    logDestination: logs.destination,
    env: { LOG_LEVEL: "info" },
  });
  h = harness;
  const { jar } = await harness.install(SHOP);
  await harness.connect(jar, PROVIDER, 1001);
  const reconnects = jobs(harness);
  const [installJob] = await reconnects.reconnects();
  expect(installJob?.id).toBeDefined();
  const first = await harness.maintenanceWorker();
  expect(await reconnects.finished(installJob?.id ?? "")).toMatchObject({ matched: 0 });
  await first.close();
  for (const job of await reconnects.reconnects()) await job.remove();

  const now = new Date().toISOString();
  const entry = (
    orderId: string,
    reason: string,
    category: DeadLetterData["category"],
  ): DeadLetterData => ({
    shop: SHOP,
    orderId,
    topic: "orders/create",
    reason,
    category,
    errorClass: "Error",
    attempts: 1,
    firstFailedAt: now,
    lastFailedAt: now,
  });
  const refused = new ShopifyTokenError(SHOP).message;
  for (let i = 0; i < count; i++) {
    const orderId = String(8_000_000 + i);
    await harness.ctx.snapshots.storeOrder(
      sourceOrder({ shop: SHOP as ShopDomain, id: orderId as ShopifyOrderId }),
    );
    await harness.ctx.queues.addDeadLetter(
      deadLetterId(SHOP, orderId),
      entry(orderId, refused, "config"),
    );
  }
  // Not the token's: they stay.
  for (const [orderId, reason, category] of [
    ["8100001", "no provider location for Shopify location 4001", "config"],
    ["8100002", "the provider refused a field", "provider-validation"],
  ] as const) {
    await harness.ctx.snapshots.storeOrder(
      sourceOrder({ shop: SHOP as ShopDomain, id: orderId as ShopifyOrderId }),
    );
    await harness.ctx.queues.addDeadLetter(
      deadLetterId(SHOP, orderId),
      entry(orderId, reason, category),
    );
  }
  const backfill = await harness.ctx.backfills.create({
    shop: SHOP,
    since: null,
    until: now,
  });
  await harness.ctx.backfills.setStatus(backfill.id, "paused");
  await harness.ctx.shops.setStatus(SHOP, "paused", RECONNECT_NEEDED);
  return { harness, reconnects, backfillId: backfill.id };
}

/** The merchant opens the app from the Shopify admin: a token exchange, a new pair. */
async function openTheApp(harness: InstallHarness) {
  const q = new URLSearchParams({
    embedded: "1",
    shop: SHOP,
    host: HOST,
    id_token: await mintSessionToken(SHOP, KEYS),
  });
  const page = await harness.get(`/settings?${q.toString()}`);
  expect(page.status).toBe(200);
  expect((await harness.ctx.shops.getShop(SHOP))?.status).toBe("active");
}

/** The sweep's line when it queues what waited for the shop's token. */
const RESUMED_BY_SWEEP =
  "what waited for the shop's token was never resumed: the sweep queued its job again";

const waitingEntries = async (harness: InstallHarness) =>
  (await harness.ctx.queues.deadLetter.getJobCounts("waiting")).waiting;

/** The orders queued again by a dead-letter retry (no sync worker runs: they stay queued). */
async function retriedOrders(harness: InstallHarness): Promise<string[]> {
  const queued = await harness.ctx.queues.sync.getJobs(["prioritized", "waiting", "delayed"]);
  return queued
    .filter((j) => j.data.trigger === "dlq-retry")
    .map((j) => j.data.orderId)
    .sort();
}

const logLines = () =>
  (logs?.read() ?? "")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/**
 * One sweep of the shop, as its scheduler queues one every RECONCILE_INTERVAL_MS; answers its
 * result once a maintenance worker has run it.
 */
async function sweep(harness: InstallHarness): Promise<unknown> {
  const scheduler = new SweepScheduler(harness.ctx.redis, harness.ctx.prefix, 60_000);
  closers.push(() => scheduler.close());
  const job = await scheduler.queue.add("sweep", { shop: SHOP });
  const id = job.id ?? "";
  await expect
    .poll(async () => ["completed", "failed"].includes(await scheduler.queue.getJobState(id)), {
      timeout: 60_000,
    })
    .toBe(true);
  const done = await scheduler.queue.getJob(id);
  expect(done?.failedReason).toBeUndefined();
  return done?.returnvalue;
}

/** The reconnect job the web process queued is lost (Redis restarted without persistence). */
async function loseTheJob(reconnects: ReturnType<typeof jobs>) {
  const queued = await reconnects.reconnects();
  expect(queued).toHaveLength(1);
  for (const job of queued) await job.remove();
}

/** Runs a maintenance worker on the job until it has processed `n` entries, then stops it. */
async function workerStoppedAfter(
  harness: InstallHarness,
  reconnects: ReturnType<typeof jobs>,
  id: string,
  n: number,
) {
  const worker = await harness.maintenanceWorker();
  worker.handle.worker.on("progress", (_job, progress) => {
    if ((progress as BulkRetryCounts).processed >= n) void worker.close();
  });
  await expect
    .poll(
      async () =>
        !worker.handle.worker.isRunning() && ((await reconnects.view(id))?.processed ?? 0) >= n,
      { timeout: 60_000 },
    )
    .toBe(true);
  await worker.close();
}

describe("a shop reconnected after Shopify refused its token", () => {
  it("queues one job and answers at once; a worker resumes what waited, in two log lines", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(ENTRIES);

    // No worker runs: the page's answer cannot depend on the backlog.
    await openTheApp(harness);
    const queued = await reconnects.reconnects();
    expect(queued).toHaveLength(1);
    const id = queued[0]?.id ?? "";
    expect(await reconnects.view(id)).toMatchObject({
      status: "queued",
      filter: { shop: SHOP, reason: "config" },
      processed: 0,
    });
    // Nothing was retried or resumed by the web process.
    expect(await waitingEntries(harness)).toBe(ENTRIES + 2);
    expect(await retriedOrders(harness)).toEqual([]);
    expect((await harness.ctx.backfills.latest(SHOP))?.status).toBe("paused");

    await harness.maintenanceWorker();
    expect(await reconnects.finished(id)).toMatchObject({
      status: "completed",
      matched: ENTRIES,
      processed: ENTRIES,
      retried: ENTRIES,
      skipped: 0,
      failed: 0,
      backfillResumed: true,
      claimTags: { tried: 0, untagged: 0 },
    });
    // The two entries of other causes stay; each token-refused order is queued once.
    expect(await waitingEntries(harness)).toBe(2);
    const orders = await retriedOrders(harness);
    expect(orders).toHaveLength(ENTRIES);
    expect(new Set(orders).size).toBe(ENTRIES);
    const backfill = await harness.ctx.backfills.latest(SHOP);
    expect([backfill?.id, backfill?.status]).toEqual([backfillId, "running"]);
    expect(await harness.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({ waiting: 2 });

    // One line when it starts, one when it ends; none per entry.
    const lines = logLines().filter((l) => l.component === "dead-letters" && l.jobId === id);
    expect(lines.map((l) => l.msg)).toEqual([
      "resuming what waited for the shop's token",
      "what waited for the shop's token resumed",
    ]);
    expect(lines[0]).toMatchObject({ shop: SHOP, matched: ENTRIES, backfillResumed: true });
    expect(lines[1]).toMatchObject({ shop: SHOP, retried: ENTRIES, skipped: 0, failed: 0 });
    expect(logLines().filter((l) => l.msg === "dead letter retry")).toEqual([]);
  });

  it("queues one job for two reconnects at once", async () => {
    const { harness, reconnects } = await pausedShop(3);
    // Two installs through Shopify's OAuth at once (two tabs, a double click).
    const [one, two] = await Promise.all([harness.install(SHOP), harness.install(SHOP)]);
    expect([one.callback.status, two.callback.status]).toEqual([302, 302]);
    const queued = await reconnects.reconnects();
    expect(queued).toHaveLength(1);
    await harness.maintenanceWorker();
    expect(await reconnects.finished(queued[0]?.id ?? "")).toMatchObject({
      matched: 3,
      retried: 3,
    });
    expect(await retriedOrders(harness)).toHaveLength(3);
  });

  it("stopped in the middle, is finished by the next worker with every entry retried once", async () => {
    const { harness, reconnects } = await pausedShop(ENTRIES);
    await openTheApp(harness);
    const [job] = await reconnects.reconnects();
    const id = job?.id ?? "";
    // The worker stops (a deploy) right after the chunk that brings it to 80 entries.
    await workerStoppedAfter(harness, reconnects, id, 80);
    const between = await reconnects.view(id);
    expect(between).toMatchObject({ status: "queued", matched: ENTRIES, processed: 80 });
    expect(await waitingEntries(harness)).toBe(ENTRIES + 2 - 80);
    await harness.maintenanceWorker();
    expect(await reconnects.finished(id)).toMatchObject({
      status: "completed",
      matched: ENTRIES,
      processed: ENTRIES,
      retried: ENTRIES,
      skipped: 0,
      failed: 0,
      backfillResumed: true,
    });
    expect(await waitingEntries(harness)).toBe(2);
    const orders = await retriedOrders(harness);
    expect(orders).toHaveLength(ENTRIES);
    expect(new Set(orders).size).toBe(ENTRIES);
  });

  it("leaves the backfill paused and the entries kept when the shop uninstalled before it ran", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(3);
    await openTheApp(harness);
    const [job] = await reconnects.reconnects();
    // The merchant uninstalls the app before a worker runs the job (the uninstall pauses the
    // shop's backfill, to go on at a reinstall).
    await harness.ctx.shops.setStatus(SHOP, "uninstalled");
    await harness.maintenanceWorker();
    expect(await reconnects.finished(job?.id ?? "")).toMatchObject({
      status: "completed",
      matched: 3,
      retried: 0,
      skipped: 3,
      backfillResumed: false,
    });
    const backfill = await harness.ctx.backfills.latest(SHOP);
    expect([backfill?.id, backfill?.status]).toEqual([backfillId, "paused"]);
    expect(await waitingEntries(harness)).toBe(5);
  });

  it("queues another job for a reconnect once the first started, which resumes what waited since", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(20);
    await openTheApp(harness);
    const [job] = await reconnects.reconnects();
    const id = job?.id ?? "";
    // The job starts (it resumes the backfill, reads the entries) and is stopped after a chunk.
    await workerStoppedAfter(harness, reconnects, id, 8);

    // Shopify refuses the new token too: the backfill pauses again (its job ends, as the backfill
    // worker ends it), an order is dead-lettered after the job read its entries, and the merchant
    // opens the app once more.
    const backfills = new BackfillQueue(
      harness.ctx.redis,
      harness.ctx.prefix,
      harness.ctx.backfills,
    );
    closers.push(() => backfills.close());
    await (await backfills.queue.getJob(backfillJobId(backfillId)))?.remove();
    await harness.ctx.backfills.setStatus(backfillId, "paused");
    const late = String(8_000_000 + 20);
    await tokenRefusedDeadLetter(harness, SHOP, late);
    await harness.ctx.shops.setStatus(SHOP, "paused", RECONNECT_NEEDED);
    await openTheApp(harness);
    const both = await reconnects.reconnects();
    expect(both).toHaveLength(2);
    const second = both.find((j) => j.id !== id)?.id ?? "";

    await harness.maintenanceWorker();
    const [one, two] = [await reconnects.finished(id), await reconnects.finished(second)];
    expect([one.status, two.status]).toEqual(["completed", "completed"]);
    expect(two.backfillResumed).toBe(true);
    expect((await harness.ctx.backfills.latest(SHOP))?.status).toBe("running");
    // Each of the 21 orders queued once, by one job or the other; the other entries stay.
    expect(one.retried + two.retried).toBe(21);
    expect(await waitingEntries(harness)).toBe(2);
    const orders = await retriedOrders(harness);
    expect(orders).toHaveLength(21);
    expect(new Set(orders).size).toBe(21);
  });
});

/**
 * The reconnect's one job is the only path to what waited for the shop's token; when it never
 * runs (the web process could not queue it, Redis lost it, a worker of an older version took
 * it), the shop's reconciliation sweep queues it again, once the shop's token is accepted.
 */
describe("the sweep of a reconnected shop whose reconnect job never ran", () => {
  it("queues the job again, which resumes the backfill and retries the dead letters", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(3);
    await openTheApp(harness);
    await loseTheJob(reconnects);
    await harness.maintenanceWorker();

    expect(await sweep(harness)).toMatchObject({ checked: 0 });
    const queued = await reconnects.reconnects();
    expect(queued).toHaveLength(1);
    const [job] = queued;
    expect(await reconnects.finished(job?.id ?? "")).toMatchObject({
      status: "completed",
      matched: 3,
      retried: 3,
      backfillResumed: true,
    });
    const backfill = await harness.ctx.backfills.latest(SHOP);
    expect([backfill?.id, backfill?.status]).toEqual([backfillId, "running"]);
    expect(await waitingEntries(harness)).toBe(2);
    expect(await retriedOrders(harness)).toHaveLength(3);

    // One line names the shop and what it found waiting.
    const said = logLines().filter((l) => l.msg === RESUMED_BY_SWEEP);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({
      level: "info",
      shop: SHOP,
      backfillId,
      deadLetters: 3,
      jobId: job?.id,
      queuedToday: 1,
    });

    // Nothing waits any more: the next sweep queues nothing.
    await sweep(harness);
    expect(await reconnects.reconnects()).toHaveLength(1);
  });

  it("queues nothing while the shop still needs a reconnect, nor once it uninstalled", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(3);
    await harness.maintenanceWorker();
    expect(await sweep(harness)).toEqual({ skipped: "shop not active" });
    await harness.ctx.shops.setStatus(SHOP, "uninstalled");
    expect(await sweep(harness)).toEqual({ skipped: "shop not active" });

    expect(await reconnects.reconnects()).toEqual([]);
    const backfill = await harness.ctx.backfills.latest(SHOP);
    expect([backfill?.id, backfill?.status]).toEqual([backfillId, "paused"]);
    expect(await waitingEntries(harness)).toBe(5);
    expect(logLines().filter((l) => l.msg === RESUMED_BY_SWEEP)).toEqual([]);
  });

  it("does not queue a second job while the shop's job waits to go on", async () => {
    const { harness, reconnects } = await pausedShop(ENTRIES);
    await openTheApp(harness);
    const [job] = await reconnects.reconnects();
    const id = job?.id ?? "";
    // The job has started (its dedupe key is gone: a reconnect now would queue another) and was
    // stopped after a chunk; it waits to go on, here for an hour (a retry's backoff after a
    // failed attempt), with most of what waited still waiting.
    await workerStoppedAfter(harness, reconnects, id, 8);
    const stopped = await harness.ctx.queues.deadLetter.getJobCounts("waiting");
    expect(stopped.waiting).toBeGreaterThan(2);
    const waiting = await (await reconnects.reconnects())[0]?.getState();
    expect(waiting).toBe("delayed");
    await (await reconnects.reconnects())[0]?.changeDelay(3_600_000);

    await harness.maintenanceWorker();
    await sweep(harness);
    expect((await reconnects.reconnects()).map((j) => j.id)).toEqual([id]);
    expect(logLines().filter((l) => l.msg === RESUMED_BY_SWEEP)).toEqual([]);

    await (await reconnects.reconnects())[0]?.promote();
    expect(await reconnects.finished(id)).toMatchObject({
      status: "completed",
      retried: ENTRIES,
    });
    expect(await waitingEntries(harness)).toBe(2);
  });

  it("queues the job again after a worker of an older version took it without running it", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(3);
    await openTheApp(harness);
    const [job] = await reconnects.reconnects();
    const id = job?.id ?? "";
    // A rolling deploy: the maintenance worker of a version before the reconnect job, which
    // completes any job that is not a sweep without running it.
    const old = new Worker(
      QUEUE.maintenance,
      createSweepProcessor({ ...harness.ctx, logger: harness.ctx.logger }),
      queueOptions(duplicateConnection(harness.ctx.redis), harness.ctx.prefix),
    );
    closers.push(() => old.close());
    const taken = await reconnects.finished(id);
    expect(taken).toMatchObject({ status: "failed", processed: 0 });
    expect(taken.error).toContain("the shop's next reconciliation sweep");
    await old.close();
    expect((await harness.ctx.backfills.latest(SHOP))?.status).toBe("paused");

    await harness.maintenanceWorker();
    await sweep(harness);
    const again = (await reconnects.reconnects()).find((j) => j.id !== id);
    expect(await reconnects.finished(again?.id ?? "")).toMatchObject({
      status: "completed",
      retried: 3,
      backfillResumed: true,
    });
    const backfill = await harness.ctx.backfills.latest(SHOP);
    expect([backfill?.id, backfill?.status]).toEqual([backfillId, "running"]);
    expect(await waitingEntries(harness)).toBe(2);
  });

  it("reads the dead-letter queue only for a shop with config dead letters recorded", async () => {
    const { harness, reconnects } = await pausedShop(3);
    await openTheApp(harness);
    await loseTheJob(reconnects);
    await harness.maintenanceWorker();
    await sweep(harness);
    const [first] = await reconnects.reconnects();
    await reconnects.finished(first?.id ?? "");

    // Every read of the queue's entry ids (the list of waiting entries), and a marker command.
    const list = `${harness.ctx.prefix}:dead-letter:wait`;
    const markers = new Set<string>();
    let listReads = 0;
    const monitor = await monitorRedis(service("redisUrl"), ({ args }) => {
      const [name, key] = [args[0]?.toLowerCase(), args[1]];
      // BullMQ's getRanges reads the list in a script of its own.
      if (name === "lrange" && key === list) listReads++;
      if (name === "get" && key?.startsWith(`${list}:marker-`)) markers.add(key);
    });
    closers.push(async () => monitor.stop());
    let n = 0;
    /** How many reads of the list the log shows up to now (a marker: every command before it). */
    const readsSoFar = async () => {
      const marker = `${list}:marker-${n++}`;
      await harness.ctx.redis.get(marker);
      await expect.poll(() => markers.has(marker)).toBe(true);
      return listReads;
    };

    // The refusal's entries were retried; the two others stay. This sweep reads the queue once
    // more, finds none of a refused token, and forgets the count.
    await sweep(harness);
    expect(await readsSoFar()).toBeGreaterThan(0);
    // Nothing was recorded since: the next sweeps read nothing of the queue.
    const before = await readsSoFar();
    await sweep(harness);
    await sweep(harness);
    expect(await readsSoFar()).toBe(before);
    expect(await reconnects.reconnects()).toHaveLength(1);

    // A refusal recorded later is found by the next sweep.
    await tokenRefusedDeadLetter(harness, SHOP, "8300001");
    await sweep(harness);
    const again = (await reconnects.reconnects()).find((j) => j.id !== first?.id);
    expect(await reconnects.finished(again?.id ?? "")).toMatchObject({
      status: "completed",
      matched: 1,
      retried: 1,
    });
  });

  it("finds the refusal's entries recorded before their count existed, once the shop reconnects", async () => {
    const { harness, reconnects, backfillId } = await pausedShop(3);
    // Only the entries wait (its backfill had finished), and they were recorded by a version
    // that kept no count of a shop's config dead letters.
    await harness.ctx.backfills.setStatus(backfillId, "completed");
    await harness.ctx.redis.del(configDeadLettersKey(harness.ctx.prefix, SHOP));
    await openTheApp(harness);
    await loseTheJob(reconnects);
    await harness.maintenanceWorker();

    await sweep(harness);
    const queued = await reconnects.reconnects();
    expect(queued).toHaveLength(1);
    expect(await reconnects.finished(queued[0]?.id ?? "")).toMatchObject({
      status: "completed",
      matched: 3,
      retried: 3,
    });
    expect(await retriedOrders(harness)).toHaveLength(3);
  });

  it(`leaves what a job could not retry after ${RECONNECT_NET_TIMES} jobs, until the day is over`, async () => {
    const { harness, reconnects, backfillId } = await pausedShop(0);
    // Its backfill had finished: the entry below is all that waits.
    await harness.ctx.backfills.setStatus(backfillId, "completed");
    // An order dead-lettered by the refusal that Shopify no longer has, and whose snapshot
    // expired: each retry leaves it, saying why.
    await tokenRefusedDeadLetter(harness, SHOP, "8200001", { snapshot: false });
    await openTheApp(harness);
    await loseTheJob(reconnects);
    await harness.maintenanceWorker();

    for (let n = 1; n <= RECONNECT_NET_TIMES + 2; n++) {
      await sweep(harness);
      const all = await reconnects.reconnects();
      expect(all).toHaveLength(Math.min(n, RECONNECT_NET_TIMES));
      for (const j of all) {
        expect(await reconnects.finished(j.id ?? "")).toMatchObject({
          status: "completed",
          matched: 1,
          skipped: 1,
        });
      }
    }
    // The entry stays, with its reason.
    expect(await waitingEntries(harness)).toBe(3);
    expect(logLines().filter((l) => l.msg === RESUMED_BY_SWEEP)).toHaveLength(RECONNECT_NET_TIMES);
  });
});
