import { randomUUID } from "node:crypto";
import { type Job, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import { LIVE_WAITER_PRIORITY, type LiveShare, OrderQueues } from "../../src/queue/order-queues.ts";
import { service } from "../helpers/services.ts";

/**
 * One store's flash sale must not hold up another store's orders in the queue: a shop's live
 * jobs beyond what its store's window can take wait behind other shops' live jobs, and a job the
 * limiter handed back comes back between the two. Real Redis, real BullMQ.
 */

const redis = new Redis(service("redisUrl"), { maxRetriesPerRequest: null });
afterAll(() => redis.disconnect());

function queuesWith(liveShare: LiveShare) {
  const prefix = `t-${randomUUID()}`;
  const queues = new OrderQueues(redis, prefix, {}, { liveShare });
  onTestFinished(() => queues.close());
  return { queues, prefix };
}

const live = (shop: string, orderId: string): SyncJobData => ({
  shop,
  orderId,
  priority: "live",
  trigger: "orders/create",
  receivedAt: Date.now(),
});

/** The order one worker takes the queued jobs in, as `shop-initial + orderId`. */
async function takenInOrder(prefix: string, count: number): Promise<string[]> {
  const taken: string[] = [];
  let done = () => {};
  const all = new Promise<void>((r) => {
    done = r;
  });
  const connection = redis.duplicate();
  const worker = new Worker<SyncJobData>(
    QUEUE.sync,
    async (job: Job<SyncJobData>) => {
      taken.push(`${job.data.shop[0]}${job.data.orderId}`);
      if (taken.length === count) done();
    },
    { ...queueOptions(connection, prefix), concurrency: 1 },
  );
  onTestFinished(async () => {
    await worker.close();
    connection.disconnect();
  });
  await all;
  return taken;
}

describe("the sync queue in a flash sale", () => {
  it("runs a quiet shop's live order ahead of another shop's orders beyond its window", async () => {
    const { queues, prefix } = queuesWith({ limit: 5, windowMs: 60_000 });
    for (let i = 1; i <= 12; i++) await queues.enqueueSync(live("a.myshopify.com", String(i)));
    await queues.enqueueSync(live("b.myshopify.com", "1"));

    // The flooding shop's own orders stay in the order they came.
    expect(await takenInOrder(prefix, 13)).toEqual([
      ...["a1", "a2", "a3", "a4", "a5"],
      "b1",
      ...["a6", "a7", "a8", "a9", "a10", "a11", "a12"],
    ]);
  });

  it("brings a job the limiter handed back behind other shops' live orders, ahead of a flood", async () => {
    const { queues, prefix } = queuesWith({ limit: 2, windowMs: 60_000 });
    const first = await queues.enqueueSync(live("a.myshopify.com", "1"));
    for (let i = 2; i <= 4; i++) await queues.enqueueSync(live("a.myshopify.com", String(i)));
    await queues.enqueueSync(live("b.myshopify.com", "1"));
    // What the worker does with a live job the limiter refused (src/engine/sync-processor.ts).
    await first.changePriority({ priority: LIVE_WAITER_PRIORITY });

    expect(await takenInOrder(prefix, 5)).toEqual(["a2", "b1", "a1", "a3", "a4"]);
  });

  it("counts a shop's live jobs over the last window only: after a quiet window it is live again", async () => {
    const { queues } = queuesWith({ limit: 2, windowMs: 300 });
    const priorities = async (shop: string, ids: string[]) => {
      const out: number[] = [];
      for (const id of ids) out.push((await queues.enqueueSync(live(shop, id))).priority);
      return out;
    };
    const [a1, a2, a3] = await priorities("a.myshopify.com", ["1", "2", "3"]);
    expect(a1).toBeLessThan(LIVE_WAITER_PRIORITY);
    expect(a2).toBe(a1);
    expect(a3).toBeGreaterThan(LIVE_WAITER_PRIORITY);
    // Two windows later nothing of the burst is counted any more.
    await new Promise((r) => setTimeout(r, 650));
    expect(await priorities("a.myshopify.com", ["4"])).toEqual([a1]);
  });

  it("leaves backfill and resync behind every live job, whatever a shop queued", async () => {
    const { queues, prefix } = queuesWith({ limit: 1, windowMs: 60_000 });
    await queues.enqueueSync({
      ...live("b.myshopify.com", "9"),
      priority: "bulk",
      trigger: "backfill",
    });
    for (let i = 1; i <= 3; i++) await queues.enqueueSync(live("a.myshopify.com", String(i)));

    expect(await takenInOrder(prefix, 4)).toEqual(["a1", "a2", "a3", "b9"]);
  });
});
