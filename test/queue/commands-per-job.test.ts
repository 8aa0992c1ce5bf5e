import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import { OrderQueues } from "../../src/queue/order-queues.ts";

// What the sync queue itself costs per job, its options included (deduplication, priorities,
// completed jobs removed as they finish): the Redis commands (those inside BullMQ's scripts counted) a
// worker whose processor does nothing runs to take and finish each, on a redis-server of this
// file's own so nothing else is counted. The processor's own commands:
// test/engine/work-per-job.test.ts.

const JOBS = 400;

let redisServer: RedisServerHandle;
let redis: Redis;

beforeAll(async () => {
  redisServer = await startRedisServer();
  redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  redis.disconnect();
  await redisServer.stop();
});

async function commandCalls(): Promise<number> {
  const info = await redis.info("commandstats");
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe("the sync queue's own work per job", () => {
  it("takes and finishes a live order's job in at most 29.9 commands (32.4 before)", async () => {
    const prefix = `t-${randomUUID()}`;
    const queues = new OrderQueues(redis, prefix);
    try {
      for (let i = 0; i < JOBS; i++) {
        const data: SyncJobData = {
          shop: `shop-${i % 20}.myshopify.com`,
          orderId: String(90_000_000 + i),
          priority: "live",
          trigger: "orders/create",
          receivedAt: Date.now(),
        };
        await queues.enqueueSync(data);
      }
      let done = 0;
      const connection = redis.duplicate();
      const before = await commandCalls();
      const worker = new Worker<SyncJobData>(QUEUE.sync, async () => ({ outcome: "synced" }), {
        ...queueOptions(connection, prefix),
        concurrency: 16,
      });
      worker.on("completed", () => {
        done++;
      });
      try {
        await expect.poll(() => done, { timeout: 20_000, interval: 20 }).toBe(JOBS);
        const perJob = ((await commandCalls()) - before - 1) / JOBS;
        console.log(`the sync queue's commands per job: ${perJob.toFixed(2)}`);
        expect(perJob).toBeLessThanOrEqual(29.9);
      } finally {
        await worker.close();
        connection.disconnect();
      }
    } finally {
      await queues.close();
    }
  });
});
