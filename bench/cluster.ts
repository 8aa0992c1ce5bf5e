/**
 * npm run bench:cluster — the sync queue on a local three-master Redis Cluster, with 1 shard and
 * with 3 (SYNC_QUEUE_SHARDS): the same jobs (one order each, across many stores) queued through
 * `OrderQueues.enqueueSync` and run by the sync worker's shard workers with a processor that does
 * nothing, so what is counted is the queue's own work. Prints, per master, the commands it ran
 * (INFO commandstats, those inside Lua scripts included) and per second, and the busiest
 * master's share: with one shard one master carries the queue; with three, each a third.
 *
 *   npm run bench:cluster -- --jobs 6000 --stores 300 --concurrency 16
 */

import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import type { Cluster, Redis } from "ioredis";
import { startShardWorkers } from "../src/jobs/sync-worker.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createRedis } from "../src/queue/connection.ts";
import { OrderQueues } from "../src/queue/order-queues.ts";
import { startRedisCluster } from "../test/helpers/redis-cluster.ts";

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "6000" },
    stores: { type: "string", default: "300" },
    concurrency: { type: "string", default: "16" },
    shards: { type: "string", default: "1,3" },
  },
});
const JOBS = Number(args.jobs);
const STORES = Number(args.stores);
const CONCURRENCY = Number(args.concurrency);
const SHARDS = args.shards.split(",").map(Number);

const cluster = await startRedisCluster({ replicas: 0 });
const target = { nodes: cluster.nodes, tls: false };

/** Every master's client, by port. */
function masters(connection: Cluster): Map<number, Redis> {
  return new Map(connection.nodes("master").map((node) => [Number(node.options.port), node]));
}

/** Commands a master ran since its last reset, those inside scripts included. */
async function calls(node: Redis): Promise<number> {
  const info = await node.info("commandstats");
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

interface Row {
  shards: number;
  seconds: number;
  jobsPerSecond: number;
  perMaster: { port: number; commands: number; perSecond: number; share: number }[];
  busiestShare: number;
}

async function run(shards: number): Promise<Row> {
  const connection = createRedis(target, "worker", "bench-cluster") as Cluster;
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  const queues = new OrderQueues(connection, prefix, {}, { syncShards: shards });
  await queues.layouts();
  const nodes = masters(connection);
  for (const node of nodes.values()) await node.config("RESETSTAT");

  const started = performance.now();
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < JOBS; i++) {
    pending.push(
      queues.enqueueSync({
        shop: `store-${i % STORES}.myshopify.com`,
        orderId: String(1_000_000 + i),
        priority: "live",
        trigger: "orders/create",
        receivedAt: Date.now(),
      }),
    );
    if (pending.length === 64) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  let done = 0;
  const workers = startShardWorkers(
    {
      queues,
      redis: connection,
      prefix,
      logger: createLogger("silent"),
      config: { env: { WORKER_CONCURRENCY: CONCURRENCY, WORKER_LOCK_MS: 30_000 } },
    },
    async () => {
      done++;
    },
  );
  while (done < JOBS) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - started) / 1000;
  await workers.close();

  const perMaster = [];
  for (const [port, node] of nodes) perMaster.push({ port, commands: await calls(node) });
  const total = perMaster.reduce((sum, m) => sum + m.commands, 0);
  for (const queue of await queues.allSyncQueues({ fresh: true })) {
    await queue.obliterate({ force: true });
  }
  await queues.close();
  connection.disconnect();
  const rows = perMaster.map((m) => ({
    ...m,
    perSecond: Math.round(m.commands / seconds),
    share: m.commands / total,
  }));
  return {
    shards,
    seconds,
    jobsPerSecond: Math.round(JOBS / seconds),
    perMaster: rows,
    busiestShare: Math.max(...rows.map((m) => m.share)),
  };
}

try {
  console.log(
    `${JOBS} jobs over ${STORES} stores, one process, concurrency ${CONCURRENCY}, no-op processor`,
  );
  for (const shards of SHARDS) {
    const row = await run(shards);
    console.log(
      `\n${row.shards} shard(s): ${row.seconds.toFixed(1)} s, ${row.jobsPerSecond} jobs/s, busiest master ${(row.busiestShare * 100).toFixed(1)} %`,
    );
    console.log("| master | commands | commands/s | share |");
    console.log("|---|---|---|---|");
    for (const m of row.perMaster) {
      console.log(
        `| :${m.port} | ${m.commands} | ${m.perSecond} | ${(m.share * 100).toFixed(1)} % |`,
      );
    }
  }
} finally {
  await cluster.stop();
}
