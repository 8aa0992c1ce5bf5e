import { UnrecoverableError, Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import {
  BackfillQueue,
  BackfillRepository,
  type BackfillStatus,
  progressOf,
  SWEEP_JOB,
  SweepScheduler,
} from "../../src/backfill/index.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import { runCli } from "../helpers/cli.ts";
import { maintenanceWorker } from "../helpers/maintenance-worker.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { AMPLE_BUDGET, standInOrder } from "../helpers/standin-orders.ts";

let pipeline: Pipeline;
let queue: BackfillQueue | undefined;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await queue?.close();
  queue = undefined;
  await pipeline?.close();
});

const DAY = 86_400_000;

/** Orders straight into the stand-in's store: no webhook was ever sent for them. */
function seedOrders(count: number, newestAt: number, spacingMs: number) {
  const shop = pipeline.shopify.state.shop(TEST_SHOP);
  if (!shop) throw new Error("the stand-in has no test shop");
  for (let i = 1; i <= count; i++) {
    const at = new Date(newestAt - (count - i) * spacingMs).toISOString();
    shop.putOrder(standInOrder(i, at).payload);
  }
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function providerCreates() {
  return pipeline.sandbox.state.arrivals.filter(
    (a) => a.method === "POST" && /\/orders$/.test(a.path) && a.status === 201,
  ).length;
}

/** Samples the sync queue's delayed set until stopped; answers the largest size seen. */
function sampleDelayed() {
  let largest = 0;
  let sampling = true;
  const run = (async () => {
    while (sampling) {
      largest = Math.max(largest, await pipeline.ctx.queues.sync.getDelayedCount());
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    async stop() {
      sampling = false;
      await run;
      return largest;
    },
  };
}

describe("backfill", () => {
  it("feeds the sync queue at the provider's budget: no 429, no delayed jobs", async () => {
    // 20 requests a second at the provider, and the connector told the same.
    pipeline = await startPipeline({
      sandbox: { rateLimit: 20, windowMs: 1_000 },
      env: { PROVIDER_RATE_LIMIT: "20", PROVIDER_RATE_WINDOW_MS: "1000" },
    });
    seedOrders(60, Date.now() - DAY, 60_000);
    const repo = new BackfillRepository(pipeline.ctx.db);
    queue = new BackfillQueue(pipeline.ctx.redis, pipeline.ctx.prefix, repo);
    const delayed = sampleDelayed();
    const { backfill } = await queue.start(TEST_SHOP);
    pipeline.startBackfillWorker();
    await waitFor(
      "the backfill to complete",
      async () => (await repo.get(backfill.id))?.status === "completed",
    );
    await pipeline.drain(30_000);

    expect(pipeline.sandbox.state.orders.all).toHaveLength(60);
    expect(pipeline.sandbox.state.counters.rateLimited).toBe(0);
    expect(pipeline.sandbox.state.maxInAnyWindow(1001, 1_000)).toBeLessThanOrEqual(20);
    expect(await delayed.stop()).toBe(0);
  });

  it("syncs 1,000 orders exactly once when its worker is stopped half-way and started again", async () => {
    // A budget of 100 a minute would make this a 10-minute test: the budget is not what it checks.
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    seedOrders(1_000, Date.now() - DAY, 60_000);
    const repo = new BackfillRepository(pipeline.ctx.db);
    queue = new BackfillQueue(pipeline.ctx.redis, pipeline.ctx.prefix, repo);
    const delayed = sampleDelayed();

    const { backfill, started } = await queue.start(TEST_SHOP);
    expect(started).toBe(true);
    const first = pipeline.startBackfillWorker();
    await waitFor(
      "half of the orders",
      async () => ((await repo.get(backfill.id))?.done ?? 0) >= 400,
    );
    await first.close();

    const stopped = await repo.get(backfill.id);
    expect(stopped?.status).toBe<BackfillStatus>("running");
    expect(stopped?.total).toBe(1_000);
    expect(stopped?.done).toBeGreaterThanOrEqual(400);
    expect(stopped?.done).toBeLessThan(1_000);
    expect(await queue.queue.getJobState(`backfill-${backfill.id}`)).toMatch(/delayed|waiting/);
    // Asking again while it is unfinished does not start a second one.
    expect((await queue.start(TEST_SHOP)).started).toBe(false);

    pipeline.startBackfillWorker();
    await waitFor(
      "the backfill to complete",
      async () => (await repo.get(backfill.id))?.status === "completed",
    );
    await pipeline.drain(60_000);

    const done = await repo.get(backfill.id);
    expect(done?.done).toBe(1_000);
    const ids = pipeline.sandbox.state.orders.all.map((o) => o.sourceOrderId);
    expect(new Set(ids).size).toBe(1_000);
    expect(ids).toHaveLength(1_000);
    expect(providerCreates()).toBe(1_000);
    // Every job was queued with a budget slot: none ever waited in the delayed set.
    expect(await delayed.stop()).toBe(0);
    const progress = progressOf(done ?? backfill, { scopes: "read_orders read_all_orders" });
    expect(progress).toMatchObject({ percent: 100, etaSeconds: 0, warnings: [] });
  }, 120_000);

  it.each([
    ["Redis lost its job (a restart without persistence)", "unknown"],
    ["its job failed without finishing it (its worker killed too often)", "failed"],
  ] as const)(
    "walks on after %s: the shop's next sweep queues it again",
    async (_, lost) => {
      pipeline = await startPipeline({ ...AMPLE_BUDGET });
      seedOrders(300, Date.now() - DAY, 60_000);
      const repo = new BackfillRepository(pipeline.ctx.db);
      queue = new BackfillQueue(pipeline.ctx.redis, pipeline.ctx.prefix, repo);
      const { backfill } = await queue.start(TEST_SHOP);
      const jobId = `backfill-${backfill.id}`;
      const first = pipeline.startBackfillWorker();
      await waitFor(
        "a third of the orders",
        async () => ((await repo.get(backfill.id))?.done ?? 0) >= 100,
      );
      await first.close();
      // The row keeps its cursor; its job is gone, or failed as BullMQ fails a job whose worker
      // died more often than it allows.
      if (lost === "unknown") {
        await queue.queue.remove(jobId);
      } else {
        await (await queue.queue.getJob(jobId))?.promote();
        const taker = new Worker(
          QUEUE.backfill,
          null,
          queueOptions(pipeline.ctx.redis, pipeline.ctx.prefix),
        );
        closers.push(() => taker.close());
        const job = await taker.getNextJob("taker");
        await job?.moveToFailed(
          new UnrecoverableError("job stalled more than allowable limit"),
          "taker",
        );
      }
      expect(await queue.queue.getJobState(jobId)).toBe(lost);
      expect((await repo.get(backfill.id))?.status).toBe<BackfillStatus>("running");

      const p = pipeline;
      const maintenance = await maintenanceWorker(p.ctx, (close) => closers.push(close));
      const sweeps = new SweepScheduler(p.ctx.redis, p.ctx.prefix, 60_000);
      closers.push(() => sweeps.close());
      const sweep = await sweeps.queue.add(SWEEP_JOB, { shop: TEST_SHOP });
      await waitFor(
        "the shop's sweep",
        async () => (await sweeps.queue.getJobState(sweep.id as string)) === "completed",
      );
      await maintenance.close();
      expect(await queue.queue.getJobState(jobId)).toMatch(/waiting|prioritized|delayed/);

      pipeline.startBackfillWorker();
      await waitFor(
        "the backfill to complete",
        async () => (await repo.get(backfill.id))?.status === "completed",
      );
      await pipeline.drain(60_000);
      const ids = pipeline.sandbox.state.orders.all.map((o) => o.sourceOrderId);
      expect(new Set(ids).size).toBe(300);
      expect(providerCreates()).toBe(300);
    },
    120_000,
  );

  it("starts one backfill when it is asked for several times at once", async () => {
    // The settings page, the CLI, the admin API and an install may all ask at the same moment.
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    const repo = new BackfillRepository(pipeline.ctx.db);
    queue = new BackfillQueue(pipeline.ctx.redis, pipeline.ctx.prefix, repo);
    const other = new BackfillQueue(pipeline.ctx.redis, pipeline.ctx.prefix, repo);
    try {
      const answers = await Promise.all(
        [queue, other, queue, other].map((q) => q.start(TEST_SHOP)),
      );
      expect(answers.filter((a) => a.started)).toHaveLength(1);
      expect(new Set(answers.map((a) => a.backfill.id)).size).toBe(1);
      expect(await repo.unfinished()).toHaveLength(1);
      expect(await queue.queue.getJobCounts("waiting", "delayed", "active")).toMatchObject({
        waiting: 1,
      });
    } finally {
      await other.close();
    }
  });

  it("reads only the last 60 days without read_all_orders, and says so in its progress", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET, shopify: { scopes: ["read_orders"] } });
    await pipeline.ctx.shops.updateSettings(TEST_SHOP, { scopes: "read_orders" });
    // 10 orders, one every 10 days: the 6 newest are within 60 days.
    seedOrders(10, Date.now() - DAY, 10 * DAY);
    const repo = new BackfillRepository(pipeline.ctx.db);
    queue = new BackfillQueue(pipeline.ctx.redis, pipeline.ctx.prefix, repo);
    const { backfill } = await queue.start(TEST_SHOP);
    pipeline.startBackfillWorker();
    await waitFor(
      "the backfill to complete",
      async () => (await repo.get(backfill.id))?.status === "completed",
    );
    await pipeline.drain();

    const record = await repo.get(backfill.id);
    expect(record?.done).toBe(6);
    expect(pipeline.sandbox.state.orders.all).toHaveLength(6);
    const progress = progressOf(record ?? backfill, { scopes: "read_orders" });
    expect(progress.warnings[0]).toContain("read_all_orders");
    expect(progress.warnings[0]).toContain("60 days");
  });

  it("starts through the admin API and reports done, total and ETA there", async () => {
    const ADMIN_TOKEN = "backfill-admin-token-0123456789";
    pipeline = await startPipeline({
      sandbox: AMPLE_BUDGET.sandbox,
      env: { ...AMPLE_BUDGET.env, ADMIN_TOKEN },
    });
    seedOrders(12, Date.now() - DAY, 60_000);
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
    const path = `/admin/api/shops/${TEST_SHOP}/backfill`;
    const bad = await pipeline.web.app.request(path, {
      method: "POST",
      headers,
      body: JSON.stringify({ since: "yesterday-ish" }),
    });
    expect(bad.status).toBe(400);
    const started = await pipeline.web.app.request(path, { method: "POST", headers, body: "{}" });
    expect(started.status).toBe(202);
    expect(await started.json()).toMatchObject({ started: true, status: "running", done: 0 });
    pipeline.startBackfillWorker();
    await waitFor("the backfill to complete", async () => {
      const res = await pipeline.web.app.request(path, { headers });
      return ((await res.json()) as { status: string }).status === "completed";
    });
    const res = await pipeline.web.app.request(path, { headers });
    expect(await res.json()).toMatchObject({ done: 12, total: 12, percent: 100, etaSeconds: 0 });
  });
});

describe("connector backfill without a terminal", () => {
  it("prints one plain line per step of progress on stderr, never a bar", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    seedOrders(30, Date.now() - DAY, 60_000);
    pipeline.startBackfillWorker();
    const run = await runCli(pipeline.ctx, ["backfill", "--shop", TEST_SHOP]);
    expect(run.code).toBe(0);
    // stdout holds the result alone: what started, and how it ended.
    const lines = run.stdout.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^backfill \d+ started for /);
    expect(lines[1]).toMatch(/^backfill \d+ completed: 30 orders fed to the sync queue$/);
    const steps = run.stderr.trim().split("\n");
    expect(steps.length).toBeGreaterThan(0);
    for (const line of steps) expect(line).toMatch(/^backfill \d+: \d+\/\d+ orders \(\w+\)$/);
    // A line only when something changed.
    expect(new Set(steps).size).toBe(steps.length);
    expect(steps.at(-1)).toMatch(/^backfill \d+: 30\/30 orders \(\w+\)$/);
    expect(run.stdout + run.stderr).not.toMatch(/[░█▓]/);
  });
});
