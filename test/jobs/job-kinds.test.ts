import { type Job, Queue, Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { knownKindsOnly } from "../../src/jobs/job-kinds.ts";
import { duplicateConnection } from "../../src/lib/redis-keys.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { maintenanceWorker } from "../helpers/maintenance-worker.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";

let pipeline: Pipeline | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await pipeline?.close();
  logs?.remove();
  pipeline = logs = undefined;
});

/** The pipeline's log lines that say a kind of job was left for a newer worker. */
const leftLines = () =>
  (logs?.read() ?? "")
    .split("\n")
    .filter(Boolean)
    .map(
      (line) => JSON.parse(line) as { level: string; msg: string; kind?: string; queue?: string },
    )
    .filter((line) => line.msg.includes("this version does not know"));

/**
 * A rolling deploy runs workers of two versions on the same queues. A worker from before the
 * reconnect job ("shop-reconnected") completed that job without running it, as every other
 * kind it did not know: the merchant's paused backfill and refused orders waited for nothing.
 * A kind this version does not know now waits in the queue, untouched, for a worker that does.
 */
describe("a job of a kind this version does not know (a newer version's, in a rolling deploy)", () => {
  it("is left on the maintenance queue for a newer worker, its data intact, and said once", async () => {
    logs = captureLogs("job-kinds");
    pipeline = await startPipeline({ workers: 0, logDestination: logs.destination });
    const { ctx } = pipeline;
    const worker = await maintenanceWorker(ctx, (close) => closers.push(close));
    const queue = new Queue(QUEUE.maintenance, queueOptions(ctx.redis, ctx.prefix));
    closers.push(() => queue.close());

    const later = await queue.add("a-later-kind", { shop: TEST_SHOP, step: 1 });
    const again = await queue.add("a-later-kind", { shop: TEST_SHOP, step: 2 });
    await expect.poll(() => queue.getJobState(later.id as string)).toBe("delayed");
    await expect.poll(() => queue.getJobState(again.id as string)).toBe("delayed");
    const left = await queue.getJob(later.id as string);
    expect(left?.returnvalue).toBeNull();
    expect(left?.attemptsMade).toBe(0);
    // Two jobs of the kind, one line: the queue, the kind and the fix.
    expect(leftLines()).toEqual([
      expect.objectContaining({ level: "warn", queue: QUEUE.maintenance, kind: "a-later-kind" }),
    ]);
    expect(leftLines()[0]?.msg).toContain("finish upgrading every worker");

    // The upgrade completes: the newer worker runs it as it was queued.
    await worker.close();
    await left?.promote();
    const ran: unknown[] = [];
    const newer = new Worker(
      QUEUE.maintenance,
      async (job: Job) => {
        ran.push(job.data);
        return "done";
      },
      queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
    );
    closers.push(() => newer.close());
    await expect.poll(() => queue.getJobState(later.id as string)).toBe("completed");
    expect(ran).toEqual([{ shop: TEST_SHOP, step: 1 }]);
  });

  it("is left on a sync shard, with no provider call made for it", async () => {
    logs = captureLogs("job-kinds-sync");
    pipeline = await startPipeline({ workers: 1, logDestination: logs.destination });
    const { ctx } = pipeline;
    const shard = ctx.queues.syncQueue(1, 0);
    const later = await shard.add("a-later-kind", { shop: TEST_SHOP, orderId: "7" } as never);
    await expect.poll(() => shard.getJobState(later.id as string)).toBe("delayed");
    expect(pipeline.sandbox.state.orders.all).toEqual([]);
    expect(leftLines()).toEqual([
      expect.objectContaining({ queue: QUEUE.sync, kind: "a-later-kind" }),
    ]);
  });

  it("does not hold up the kinds it knows, nor count as an attempt", async () => {
    pipeline = await startPipeline({ workers: 0 });
    const { ctx } = pipeline;
    const queue = new Queue("kinds", queueOptions(ctx.redis, ctx.prefix));
    closers.push(() => queue.close());
    const ran: string[] = [];
    const worker = new Worker(
      "kinds",
      knownKindsOnly(
        "kinds",
        ["known"],
        async (job: Job) => {
          ran.push(job.name);
        },
        { logger: ctx.logger, retryMs: 60_000 },
      ),
      queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
    );
    closers.push(() => worker.close());
    const unknown = await queue.add("unknown", {}, { attempts: 1 });
    const known = await queue.add("known", {});
    await expect.poll(() => queue.getJobState(known.id as string)).toBe("completed");
    await expect.poll(() => queue.getJobState(unknown.id as string)).toBe("delayed");
    expect(ran).toEqual(["known"]);
    // With one attempt, a failure would have been final: being left is not a failure.
    expect((await queue.getJob(unknown.id as string))?.attemptsMade).toBe(0);
  });
});
