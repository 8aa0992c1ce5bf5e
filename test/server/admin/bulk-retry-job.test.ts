import { Queue, Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { createSweepProcessor } from "../../../src/backfill/index.ts";
import { duplicateConnection } from "../../../src/lib/redis-keys.ts";
import {
  type BulkRetryCounts,
  BulkRetryQueue,
  type BulkRetryView,
} from "../../../src/ops/bulk-retry.ts";
import type { DeadLetterData } from "../../../src/queue/jobs.ts";
import { QUEUE, queueOptions } from "../../../src/queue/names.ts";
import { deadLetterId } from "../../../src/queue/order-queues.ts";
import type { ShopDomain, ShopifyOrderId } from "../../../src/sync/source-order.ts";
import { maintenanceWorker as startMaintenanceWorker } from "../../helpers/maintenance-worker.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";
import { sourceOrder } from "../../helpers/source-order-factory.ts";

const TOKEN = "admin-token-for-tests-0123456789";
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
/** Enough entries for a bulk retry of many chunks (8 entries each) to be stopped in the middle. */
const ENTRIES = 300;

type Answer = BulkRetryView & { href: string; created?: boolean };

let pipeline: Pipeline | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
});

/** A pipeline without sync workers (the retried orders stay queued, to be counted). */
async function seeded(count: number) {
  const p = await startPipeline({ env: { ADMIN_TOKEN: TOKEN }, workers: 0 });
  const now = new Date().toISOString();
  for (let i = 0; i < count; i++) {
    const orderId = String(7_000_000 + i);
    await p.ctx.snapshots.storeOrder(
      sourceOrder({ shop: TEST_SHOP as ShopDomain, id: orderId as ShopifyOrderId }),
    );
    const data: DeadLetterData = {
      shop: TEST_SHOP,
      orderId,
      topic: "orders/create",
      reason: "the provider refused a field",
      category: "provider-validation",
      errorClass: "ProviderValidationError",
      attempts: 1,
      firstFailedAt: now,
      lastFailedAt: now,
    };
    await p.ctx.queues.addDeadLetter(deadLetterId(TEST_SHOP, orderId), data);
  }
  return p;
}

function call(path: string, init: RequestInit = {}) {
  if (!pipeline) throw new Error("no pipeline");
  return pipeline.web.app.request(path, { ...init, headers: auth });
}

const startRetry = (body: unknown) =>
  call("/admin/api/dead-letters/retry", { method: "POST", body: JSON.stringify(body) });

async function follow(href: string): Promise<Answer> {
  const response = await call(href);
  expect(response.status).toBe(200);
  return (await response.json()) as Answer;
}

/** Polls the bulk retry's address until it says it finished. */
async function finished(href: string, timeoutMs = 30_000): Promise<Answer> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const view = await follow(href);
    if (view.finished) return view;
    if (Date.now() > deadline) throw new Error(`bulk retry not finished: ${JSON.stringify(view)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A bulk retry that queued every one of the ENTRIES entries again, and left none. */
const ALL_RETRIED = {
  status: "completed",
  matched: ENTRIES,
  processed: ENTRIES,
  retried: ENTRIES,
  skipped: 0,
  failed: 0,
  left: [],
};

/** The maintenance worker (the worker role's), closed after the test unless closed before. */
const maintenanceWorker = (p: Pipeline) =>
  startMaintenanceWorker(p.ctx, (close) => closers.push(close));

async function queuedSyncOrders(p: Pipeline): Promise<string[]> {
  const jobs = await p.ctx.queues.sync.getJobs(["prioritized", "waiting", "delayed"]);
  return jobs.map((j) => j.data.orderId).sort();
}

describe("POST /admin/api/dead-letters/retry runs as a job on the maintenance queue", () => {
  it("answers 202 at once with the job's address, and the same request twice gives one job", async () => {
    pipeline = await seeded(ENTRIES);
    // No worker runs yet: the answer cannot depend on the retry's length.
    const first = await startRetry({ reason: "provider-validation" });
    expect(first.status).toBe(202);
    const started = (await first.json()) as Answer;
    expect(started).toMatchObject({
      status: "queued",
      finished: false,
      created: true,
      filter: { reason: "provider-validation" },
      processed: 0,
    });
    expect(started.id).toMatch(/^dlq-retry-/);
    expect(first.headers.get("location")).toBe(started.href);
    expect(started.href).toBe(`/admin/api/dead-letters/retry/${started.id}`);

    // A second click while it waits answers the same job; another filter is another job.
    const again = await startRetry({ reason: "provider-validation" });
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ id: started.id, created: false });
    expect(await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({
      waiting: ENTRIES,
    });

    await maintenanceWorker(pipeline);
    const done = await finished(started.href);
    expect(done).toMatchObject(ALL_RETRIED);
    expect(done.startedAt).not.toBeNull();
    expect(done.finishedAt).not.toBeNull();
    expect(await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({ waiting: 0 });
    const orders = await queuedSyncOrders(pipeline);
    expect(orders).toHaveLength(ENTRIES);
    expect(new Set(orders).size).toBe(ENTRIES);

    // Once finished, the same request is a new bulk retry (with nothing left to match).
    const later = (await (await startRetry({ reason: "provider-validation" })).json()) as Answer;
    expect(later.created).toBe(true);
    expect(later.id).not.toBe(started.id);
    expect(await finished(later.href)).toMatchObject({ matched: 0, processed: 0 });
  });

  it("says what it left and why", async () => {
    pipeline = await seeded(20);
    await pipeline.ctx.shops.setStatus(TEST_SHOP, "paused", "provider credentials refused");
    await maintenanceWorker(pipeline);
    const started = (await (await startRetry({ all: true })).json()) as Answer;
    const done = await finished(started.href);
    expect(done).toMatchObject({ matched: 20, processed: 20, retried: 0, skipped: 20 });
    expect(done.left).toHaveLength(1);
    expect(done.left[0]).toMatchObject({
      result: "skipped",
      count: 20,
      message: expect.stringContaining("resume the shop first"),
    });
    expect(done.left[0]?.ids).toHaveLength(10);
    expect(await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({ waiting: 20 });
  });

  it("stopped in the middle, resumes on the next worker and loses and duplicates nothing", async () => {
    pipeline = await seeded(ENTRIES);
    const first = await maintenanceWorker(pipeline);
    // The worker stops (a deploy) right after the chunk that brings it to 80 entries.
    first.handle.worker.on("progress", (_job, progress) => {
      if ((progress as BulkRetryCounts).processed >= 80) void first.close();
    });
    const started = (await (await startRetry({ shop: TEST_SHOP })).json()) as Answer;
    for (;;) {
      const view = await follow(started.href);
      if (view.processed >= 80 && !first.handle.worker.isRunning()) break;
      expect(view.finished).toBe(false);
      await new Promise((r) => setTimeout(r, 20));
    }
    await first.close();

    // Read between the two workers: the job waits in the queue with what it did so far.
    const between = await follow(started.href);
    expect(between).toMatchObject({
      status: "queued",
      finished: false,
      matched: ENTRIES,
      processed: 80,
      retried: 80,
    });
    expect(await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({
      waiting: ENTRIES - 80,
    });
    // Asked again meanwhile: still the one job.
    expect(await (await startRetry({ shop: TEST_SHOP })).json()).toMatchObject({
      id: started.id,
      created: false,
    });

    await maintenanceWorker(pipeline);
    expect(await finished(started.href)).toMatchObject(ALL_RETRIED);
    expect(await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({ waiting: 0 });
    const orders = await queuedSyncOrders(pipeline);
    expect(new Set(orders).size).toBe(ENTRIES);
  });

  it("says a bulk retry taken by an older worker (a rolling deploy) failed, retrying nothing", async () => {
    pipeline = await seeded(3);
    const started = (await (await startRetry({ all: true })).json()) as Answer;
    // The maintenance worker of a version before bulk retry jobs: the sweep processor alone,
    // which completes any job that is not a sweep without running it.
    const old = new Worker(
      QUEUE.maintenance,
      createSweepProcessor({ ...pipeline.ctx, logger: pipeline.ctx.logger }),
      queueOptions(duplicateConnection(pipeline.ctx.redis), pipeline.ctx.prefix),
    );
    closers.push(() => old.close());
    const done = await finished(started.href);
    expect(done).toMatchObject({
      status: "failed",
      finished: true,
      error: expect.stringContaining("older version"),
    });
    expect(await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).toEqual({ waiting: 3 });
  });

  it("never reads a bulk retry that finishes while it is read as failed", async () => {
    pipeline = await seeded(1);
    const bulk = new BulkRetryQueue(pipeline.ctx.redis, pipeline.ctx.prefix);
    closers.push(() => bulk.close());
    const { id } = await bulk.start({});
    // The interleaving a poll meets on a busy machine: the job is read, then it finishes
    // (here: a worker starts and runs it) before the rest of the view is read.
    const p = pipeline;
    const read = bulk.queue.getJob.bind(bulk.queue);
    bulk.queue.getJob = async (jobId: string) => {
      const job = await read(jobId);
      await maintenanceWorker(p);
      await expect.poll(() => bulk.queue.getJobState(jobId)).toBe("completed");
      return job;
    };
    const racing = await bulk.view(id);
    expect(racing?.status).not.toBe("failed");
    expect(racing?.error).toBeUndefined();
    bulk.queue.getJob = read;
    expect(await bulk.view(id)).toMatchObject({ status: "completed", matched: 1, retried: 1 });
  });

  it("refuses bad input with the field, and 404s what is not a bulk retry", async () => {
    pipeline = await seeded(1);
    const bad = await startRetry({ reason: "nope", shop: "not a shop" });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { code: string; fields: { path: string }[] } };
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.fields.map((f) => f.path).sort()).toEqual(["reason", "shop"]);

    const unknown = await call("/admin/api/dead-letters/retry/dlq-retry-nope");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({
      error: { code: "not_found", fields: [{ path: "jobId" }] },
    });
    // Another job of the maintenance queue is not readable here, whatever its id.
    const maintenance = new Queue(
      QUEUE.maintenance,
      queueOptions(pipeline.ctx.redis, pipeline.ctx.prefix),
    );
    closers.push(() => maintenance.close());
    // Nothing was queued by the refused request.
    expect(await maintenance.count()).toBe(0);
    await maintenance.add("sweep", { shop: TEST_SHOP }, { jobId: "dlq-retry-not-one" });
    expect((await call("/admin/api/dead-letters/retry/dlq-retry-not-one")).status).toBe(404);
  });
});
