import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Job } from "bullmq";
import type { Cluster } from "ioredis";
import { describe, expect, it, onTestFinished } from "vitest";
import { type ShardWorkerDeps, startShardWorkers } from "../../src/jobs/sync-worker.ts";
import { createLogger } from "../../src/lib/logger.ts";
import type { RedisConnection } from "../../src/lib/redis-keys.ts";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import { OrderQueues, syncDedupId } from "../../src/queue/order-queues.ts";
import { readLayouts, shardOf, syncShardNames } from "../../src/queue/sync-shards.ts";
import { redisConnections } from "../helpers/redis-connections.ts";

/**
 * The sync queue in shards (SYNC_QUEUE_SHARDS): a store's jobs in one shard, the shards on
 * different masters of the run's three-master Redis Cluster, a change of shard count with jobs
 * queued, and a flooded shard beside a quiet one. Real Redis, real BullMQ workers.
 */

const connect = redisConnections("sync-shards-test");

const live = (shop: string, orderId: string): SyncJobData => ({
  shop,
  orderId,
  priority: "live",
  trigger: "orders/updated",
  receivedAt: Date.now(),
});

function queuesOn(connection: RedisConnection, prefix: string, syncShards?: number) {
  const queues = new OrderQueues(connection, prefix, {}, { syncShards });
  onTestFinished(async () => {
    for (const queue of await queues.allSyncQueues({ fresh: true }).catch(() => [])) {
      await queue.obliterate({ force: true }).catch(() => {});
    }
    await queues.close();
  });
  return queues;
}

function workersOn(
  connection: RedisConnection,
  prefix: string,
  queues: OrderQueues,
  processor: (job: Job<SyncJobData>) => Promise<unknown>,
  concurrency: number,
) {
  const deps: ShardWorkerDeps = {
    queues,
    redis: connection,
    prefix,
    logger: createLogger("silent"),
    config: { env: { WORKER_CONCURRENCY: concurrency, WORKER_LOCK_MS: 5_000 } },
  };
  const workers = startShardWorkers(deps, processor, { refreshMs: 200 });
  onTestFinished(() => workers.close());
  return workers;
}

/** The queues that hold a pending job of the order, by name. */
async function shardsHolding(queues: OrderQueues, shop: string, orderId: string) {
  const holding: string[] = [];
  for (const queue of await queues.allSyncQueues({ fresh: true })) {
    if (await queues.hasPendingJob(queue, shop, orderId)) holding.push(queue.name);
  }
  return holding;
}

const SHOPS = Array.from({ length: 12 }, (_, i) => `store-${i}.myshopify.com`);

describe.each(["one Redis", "cluster"] as const)("the sync shards on %s", (kind) => {
  it("puts every job of a store in the store's one shard, whichever process queues it", async () => {
    const connection = connect(kind);
    const prefix = `t-${randomUUID()}`;
    const web = queuesOn(connection, prefix, 3);
    const cli = queuesOn(connection, prefix, 3);
    for (const shop of SHOPS) {
      await web.enqueueSync(live(shop, "1"));
      await cli.enqueueSync({ ...live(shop, "2"), priority: "bulk", trigger: "resync" });
    }
    const byShard = new Map<string, Set<string>>();
    for (const queue of await web.allSyncQueues()) {
      const jobs = await queue.getJobs(["prioritized", "waiting"]);
      byShard.set(queue.name, new Set(jobs.map((job) => job.data.shop)));
      for (const job of jobs) expect(queue.name).toBe(`sync-${shardOf(job.data.shop, 3) + 1}of3`);
      expect(jobs.length).toBeGreaterThan(0);
    }
    expect([...byShard.keys()]).toEqual(syncShardNames(3));
    // No store in two shards, every store in one.
    const seen = [...byShard.values()].flatMap((shops) => [...shops]);
    expect(seen.sort()).toEqual([...SHOPS].sort());
  });

  it("loses and duplicates nothing when the shard count changes with jobs queued", async () => {
    const connection = connect(kind);
    const prefix = `t-${randomUUID()}`;
    // Before: one shard (the queue `sync`), five orders per store queued.
    const before = queuesOn(connection, prefix, 1);
    for (const shop of SHOPS) {
      for (const order of ["1", "2", "3", "4", "5"]) await before.enqueueSync(live(shop, order));
    }
    // After: three shards. New events about three queued orders, and two new orders per store.
    const after = queuesOn(connection, prefix, 3);
    for (const shop of SHOPS) {
      for (const order of ["1", "2", "3", "6", "7"]) await after.enqueueSync(live(shop, order));
    }
    expect(await readLayouts(connection, prefix)).toEqual([1, 3]);
    // An order's pending job is in one shard: the old one while it waits there.
    for (const shop of SHOPS) {
      for (const order of ["1", "2", "3", "4", "5"]) {
        expect(await shardsHolding(after, shop, order)).toEqual(["sync"]);
      }
      for (const order of ["6", "7"]) {
        expect(await shardsHolding(after, shop, order)).toEqual([
          `sync-${shardOf(shop, 3) + 1}of3`,
        ]);
      }
    }

    const ran: string[] = [];
    const workers = workersOn(
      connection,
      prefix,
      after,
      async (job) => ran.push(`${job.data.shop}#${job.data.orderId}`),
      3,
    );
    await workers.ready;
    expect([...workers.workers.keys()].sort()).toEqual(["sync", ...syncShardNames(3)]);
    await expect.poll(() => ran.length, { timeout: 15_000 }).toBe(SHOPS.length * 7);
    expect(new Set(ran).size).toBe(SHOPS.length * 7);
    // The drained layout leaves the record, and its worker stops.
    await expect.poll(() => readLayouts(connection, prefix), { timeout: 5_000 }).toEqual([3]);
    await expect
      .poll(() => [...workers.workers.keys()].sort(), { timeout: 5_000 })
      .toEqual(syncShardNames(3));
    expect(ran.length).toBe(SHOPS.length * 7);
  });
});

describe("an order across a change of shard count", () => {
  it("runs a job that reached the new shard only once the order's job in the old one is done", async () => {
    const connection = connect("one Redis");
    const prefix = `t-${randomUUID()}`;
    const shop = SHOPS[0] as string;
    const before = queuesOn(connection, prefix, 1);
    await before.enqueueSync(live(shop, "1"));
    const after = queuesOn(connection, prefix, 3);
    // Two producers raced the old job's end: a job of the same order reached the new shard.
    await after.syncQueue(3, shardOf(shop, 3)).add("sync", live(shop, "1"), {
      deduplication: { id: syncDedupId(shop, "1"), keepLastIfActive: true },
    });

    const spans: { queue: string; start: number; end: number }[] = [];
    const workers = workersOn(
      connection,
      prefix,
      after,
      async (job) => {
        const start = Date.now();
        await sleep(300); // the job's work
        spans.push({ queue: job.queueName, start, end: Date.now() });
      },
      6,
    );
    await workers.ready;
    await expect.poll(() => spans.length, { timeout: 10_000 }).toBe(2);
    const [first, second] = spans.sort((a, b) => a.start - b.start);
    expect(first?.queue).toBe("sync");
    expect(second?.queue).toBe(`sync-${shardOf(shop, 3) + 1}of3`);
    expect(second?.start).toBeGreaterThanOrEqual(first?.end ?? Number.POSITIVE_INFINITY);
  });
});

describe("fairness across shards", () => {
  const flooding = "flood.myshopify.com";
  const quiet =
    Array.from({ length: 50 }, (_, i) => `quiet-${i}.myshopify.com`).find(
      (shop) => shardOf(shop, 2) !== shardOf(flooding, 2),
    ) ?? "";

  async function floodThenQuiet(shards: number) {
    const connection = connect("one Redis");
    const prefix = `t-${randomUUID()}`;
    const queues = queuesOn(connection, prefix, shards);
    for (let i = 1; i <= 20; i++) await queues.enqueueSync(live(flooding, String(i)));
    const quietJob = await queues.enqueueSync(live(quiet, "1"));
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    onTestFinished(() => open());
    let active = 0;
    const done: string[] = [];
    const workers = workersOn(
      connection,
      prefix,
      queues,
      async (job) => {
        if (job.data.shop === flooding) {
          active++;
          await gate;
        }
        done.push(`${job.data.shop}#${job.data.orderId}`);
      },
      2,
    );
    await workers.ready;
    const quietQueue = queues.syncQueueNamed(quietJob.queueName);
    return {
      active: () => active,
      done,
      open,
      quietState: () => quietQueue?.getJobState(quietJob.id ?? ""),
    };
  }

  it("runs a quiet store's order while a flood in another shard holds its worker", async () => {
    const run = await floodThenQuiet(2);
    await expect.poll(() => run.done, { timeout: 5_000 }).toContain(`${quiet}#1`);
    // The flood's shard is held the whole time: nothing of it is done.
    expect(run.active()).toBe(1);
    expect(run.done).toEqual([`${quiet}#1`]);
    run.open();
    await expect.poll(() => run.done.length, { timeout: 10_000 }).toBe(21);
  });

  it("(control) holds the quiet store's order behind the flood when both are in one shard", async () => {
    const run = await floodThenQuiet(1);
    // Both of the process's slots hold flood jobs waiting at the gate: the quiet order waits.
    await expect.poll(() => run.active(), { timeout: 5_000 }).toBe(2);
    expect(await run.quietState()).toBe("prioritized");
    run.open();
    await expect.poll(() => run.done.length, { timeout: 10_000 }).toBe(21);
  });
});

describe("the sync shards on the run's Redis Cluster", () => {
  it("makes as many shards as masters by default, one on each master", async () => {
    const connection = connect("cluster") as Cluster;
    const prefix = `t-${randomUUID()}`;
    const queues = queuesOn(connection, prefix);
    expect((await queues.layouts()).current).toBe(3);
    for (const shop of SHOPS) await queues.enqueueSync(live(shop, "1"));
    // Where each shard's keys are, asked of every master.
    const holders = new Map<string, string[]>();
    for (const master of connection.nodes("master")) {
      const id = `${master.options.host}:${master.options.port}`;
      for (const name of syncShardNames(3)) {
        const keys = await master.keys(`{${prefix}:${name}*`);
        if (keys.length > 0) holders.set(name, [...(holders.get(name) ?? []), id]);
      }
    }
    expect([...holders.keys()].sort()).toEqual(syncShardNames(3));
    for (const masters of holders.values()) expect(masters).toHaveLength(1);
    expect(new Set([...holders.values()].flat()).size).toBe(3);
  });
});
