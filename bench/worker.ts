/**
 * npm run bench:worker — queued order syncs across many stores against the sandbox with its
 * limit lifted, run by 1, 2 and 4 worker processes (the production bundle `dist/main.mjs
 * --role worker`, built first by `npm run build`), next to a bare BullMQ worker whose processor
 * does nothing (the queue's own bound, bundled the same way). `--otel`: the connector's workers
 * export traces to a local OTLP sink (bench/otel-sink.ts); without it traces are off.
 */

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startSandbox } from "@connector/provider-sandbox";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { startRedisServer } from "../src/lib/redis-server.ts";
import type { ProviderStoreId } from "../src/provider/schemas.ts";
import { QUEUE } from "../src/queue/names.ts";
import { SYNC_JOB_OPTIONS, syncDedupId } from "../src/queue/order-queues.ts";
import { mapOrder } from "../src/sync/map-order.ts";
import type { ShopDomain, ShopifyOrderId } from "../src/sync/source-order.ts";
import {
  createTestDatabase,
  type PostgresHandle,
  startPostgres,
} from "../test/helpers/postgres.ts";
import { sourceOrder } from "../test/helpers/source-order-factory.ts";
import { needChild, release, stopAtExit } from "./children.ts";
import { benchContext } from "./context.ts";
import { otelFromArgs } from "./otel-sink.ts";
import { PRODUCTION_ENV, PRODUCTION_NODE_FLAGS } from "./production.ts";

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    stores: { type: "string", default: "200" },
    processes: { type: "string", default: "1,2,4" },
    /** The link stores to run on: sqlite, postgres, or both (same run, alternating). */
    database: { type: "string", default: "sqlite" },
    /** Traces on: the workers export to a local OTLP sink. */
    otel: { type: "boolean", default: false },
    /**
     * The connector workers' LOG_LEVEL. Silent by default, as every figure in BENCHMARKS.md was
     * taken; `info` is production's (a line per synced order, written to /dev/null here).
     */
    "log-level": { type: "string", default: "silent" },
  },
});
/** Said in the connector's rows when its workers log. */
const logged = args["log-level"] === "silent" ? "" : `, LOG_LEVEL=${args["log-level"]}`;
const LOG_LEVELS = ["silent", "fatal", "error", "warn", "info", "debug", "trace"];
if (!LOG_LEVELS.includes(args["log-level"])) {
  console.error(`bench:worker: --log-level must be one of ${LOG_LEVELS.join(", ")}`);
  process.exit(2);
}
const DATABASES = args.database.split(",") as ("sqlite" | "postgres")[];
const JOBS = Number(args.jobs);
const STORES = Number(args.stores);
const PROCESSES = args.processes.split(",").map(Number);
const otel = await otelFromArgs(args.otel);

// Both sides run as production bundles: the connector's own build, and the bare worker built
// with the same settings, so the comparison is not about the TypeScript loader.
execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { stdio: "inherit" });
const { bundle } = await import("../scripts/bundle.ts");
await bundle(["bench/bare-worker.ts"], { outfile: "dist/bench-bare-worker.mjs" });
await bundle(["bench/floor-worker.ts"], { outfile: "dist/bench-floor-worker.mjs" });

const redisServer = await startRedisServer();
needChild(redisServer.process, "redis-server");
const redis = new Redis(redisServer.url);
// Every run (a floor or a connector row) syncs to stores of its own: the connector's limiter
// counts the requests other clients made in a store's window (the previous run's, within its
// minute), and would do that work for them.
const RUNS = DATABASES.length * (PROCESSES.length + 1);
const storesOfRun = (run: number) =>
  Array.from({ length: STORES }, (_, i) => 2001 + 100_000 * run + i);
const sandbox = await startSandbox({
  stores: Array.from({ length: RUNS }, (_, run) => storesOfRun(run)).flat(),
  rateLimit: 1_000_000_000,
  windowMs: 60_000,
});

// Postgres with pg_stat_statements: the statements every run sends, counted by the server.
const postgres: PostgresHandle | undefined = DATABASES.includes("postgres")
  ? await startPostgres({ preload: ["pg_stat_statements"] })
  : undefined;
// SIGQUIT: Postgres's immediate shutdown, its backends with it.
const forgetPostgres = postgres
  ? stopAtExit(() => process.kill(postgres.pid(), "SIGQUIT"))
  : () => false;

async function pgQuery(sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: postgres?.url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}
if (postgres) await pgQuery("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");

/** Statements the connector sent (not BEGIN/COMMIT, not this bench's own reads). */
async function pgStatements(): Promise<number> {
  if (!postgres) return 0;
  const [row] = await pgQuery(
    `SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_statements
     WHERE query NOT ILIKE '%pg_stat_statements%' AND query NOT IN ('BEGIN', 'COMMIT')`,
  );
  return Number(row?.n ?? 0);
}

/** CPU of every Postgres process (the postmaster's children), in ms. */
function postgresCpuMs(): number {
  if (!postgres) return 0;
  const pids = execFileSync("pgrep", ["-P", String(postgres.pid())], { encoding: "utf8" })
    .trim()
    .split("\n")
    .filter(Boolean)
    .map(Number);
  let ms = 0;
  for (const pid of pids) {
    try {
      ms += procStats(pid).cpuMs;
    } catch {
      // ended between the listing and the read
    }
  }
  return ms;
}

function procStats(pid: number): { cpuMs: number; peakRssMb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  const ticks = Number(stat[11]) + Number(stat[12]);
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return { cpuMs: (ticks / 100) * 1000, peakRssMb: Number(hwm?.[1] ?? 0) / 1024 };
}

/** Commands Redis ran, those inside Lua scripts included (an EVALSHA of 9 calls counts 10). */
async function commandCalls(): Promise<number> {
  const info = await redis.info("commandstats");
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Per command name (BENCH_COMMANDS=1 prints them per job, to see where the calls go). */
async function commandsByName(): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  return new Map(
    [...info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)].map((m) => [m[1] as string, Number(m[2])]),
  );
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out");
}

interface Row {
  name: string;
  /** CPU of this process (the sandbox answering the workers) per job. */
  sandboxCpuMsPerJob: number;
  jobsPerSecond: number;
  cpuMsPerJob: number;
  /** The same, from the moment a tenth of the jobs were done: a started worker's cost. */
  steadyCpuMsPerJob: number;
  redisCallsPerJob: number;
  peakRssMb: number;
  /** Postgres statements per job (0 on SQLite), BEGIN and COMMIT not counted. */
  pgStatementsPerJob: number;
  pgCpuMsPerJob: number;
}

/**
 * The next run's stores and orders: the stores its own, the orders ones the sandbox has not seen
 * (it keeps state across runs). `order(i)` is the run's i-th one-line order, on store i mod STORES.
 */
let runIndex = 0;
function nextRun() {
  const storeIds = storesOfRun(runIndex);
  const firstId = 50_000_000 + 1_000_000 * runIndex++;
  const order = (i: number) => {
    const storeId = storeIds[i % STORES] as number;
    const shop = `bench-${storeId}.myshopify.com` as ShopDomain;
    return { storeId, order: sourceOrder({ shop, id: String(firstId + i) as ShopifyOrderId }) };
  };
  return { storeIds, order };
}

async function prepare(prefix: string, database: string) {
  const run = nextRun();
  const ctx = await benchContext({
    env: {
      ...(database.startsWith("postgres")
        ? { DATABASE_URL: database }
        : { DATABASE_PATH: database }),
      LOG_LEVEL: "silent",
    },
    redisUrl: redisServer.url,
    prefix,
    provider: { ...sandbox, baseUrl: sandbox.url },
    shops: run.storeIds.map((storeId) => ({ shop: `bench-${storeId}.myshopify.com`, storeId })),
  });
  const jobs = [];
  for (let i = 0; i < JOBS; i++) {
    const { order } = run.order(i);
    await ctx.snapshots.storeOrder(order);
    jobs.push({
      name: "sync",
      data: {
        shop: order.shop,
        orderId: order.id,
        priority: "live" as const,
        trigger: "orders/create" as const,
        receivedAt: Date.now(),
      },
      opts: {
        ...SYNC_JOB_OPTIONS,
        priority: 1,
        deduplication: { id: syncDedupId(order.shop, order.id), keepLastIfActive: true },
      },
    });
    if (jobs.length === 1000) await ctx.queues.sync.addBulk(jobs.splice(0));
  }
  if (jobs.length > 0) await ctx.queues.sync.addBulk(jobs);
  return ctx;
}

function spawnWorkers(
  count: number,
  env: Record<string, string>,
  script: string[],
): ChildProcess[] {
  return Array.from({ length: count }, () =>
    spawn(
      process.execPath,
      [
        ...(process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"] : []),
        // As the Dockerfile and `npm run start:prod` run the process, unless BENCH_NODE_FLAGS.
        ...(process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? PRODUCTION_NODE_FLAGS),
        ...script,
      ],
      {
        env: { ...process.env, ...PRODUCTION_ENV, ...env },
        stdio: ["ignore", "ignore", "inherit"],
      },
    ),
  ).map((child, index) =>
    needChild(child, `worker process ${index + 1} of ${count} (${script[0]})`),
  );
}

/**
 * Runs one row: from the workers' start to the last job. `synced` answers how many of the
 * row's jobs are done so far; once a tenth of them are, the workers' CPU is read again, so the
 * row also says what a job costs a worker that has started (start-up and warm-up not counted).
 */
async function measure(
  name: string,
  children: ChildProcess[],
  synced: () => Promise<number>,
): Promise<Row> {
  const callsBefore = await commandCalls();
  const statementsBefore = await pgStatements();
  const pgCpuBefore = postgresCpuMs();
  const byNameBefore = await commandsByName();
  const cpuBefore = process.cpuUsage();
  const started = Date.now();
  const cpuOf = () => children.reduce((sum, c) => sum + procStats(c.pid as number).cpuMs, 0);
  let warm = { jobs: 0, cpuMs: 0 };
  await waitFor(async () => {
    const jobs = await synced();
    if (jobs >= JOBS / 10) warm = { jobs, cpuMs: cpuOf() };
    return jobs >= JOBS / 10;
  }, 20 * 60_000);
  await waitFor(async () => (await synced()) >= JOBS, 20 * 60_000);
  const seconds = (Date.now() - started) / 1000;
  const stats = children.map((c) => procStats(c.pid as number));
  const cpu = process.cpuUsage(cpuBefore);
  const calls = (await commandCalls()) - callsBefore;
  const pgCpu = postgresCpuMs() - pgCpuBefore;
  const statements = (await pgStatements()) - statementsBefore;
  if (process.env.BENCH_COMMANDS) {
    const perJob = [...(await commandsByName())]
      .map(([cmd, n]) => [cmd, (n - (byNameBefore.get(cmd) ?? 0)) / JOBS] as const)
      .filter(([, n]) => n >= 0.05)
      .sort((a, b) => b[1] - a[1]);
    console.log(`${name}: ${perJob.map(([cmd, n]) => `${cmd} ${n.toFixed(2)}`).join(", ")}`);
  }
  // SIGTERM lets a profiled worker write its profile, and a traced one send its last spans (after
  // the figures were taken); the worker shuts down cleanly on it.
  const clean = Boolean(process.env.BENCH_PROFILE) || otel !== null;
  for (const c of children) {
    release(c);
    c.kill(clean ? "SIGTERM" : "SIGKILL");
  }
  if (clean) await Promise.all(children.map((c) => new Promise((r) => c.once("exit", r))));
  return {
    name,
    sandboxCpuMsPerJob: (cpu.user + cpu.system) / 1000 / JOBS,
    jobsPerSecond: JOBS / seconds,
    cpuMsPerJob: stats.reduce((s, x) => s + x.cpuMs, 0) / JOBS,
    // (None when every job was done before the first look: a run too small to tell.)
    steadyCpuMsPerJob:
      warm.jobs < JOBS
        ? (stats.reduce((s, x) => s + x.cpuMs, 0) - warm.cpuMs) / (JOBS - warm.jobs)
        : Number.NaN,
    redisCallsPerJob: calls / JOBS,
    peakRssMb: Math.max(...stats.map((s) => s.peakRssMb)),
    pgStatementsPerJob: statements / JOBS,
    pgCpuMsPerJob: pgCpu / JOBS,
  };
}

console.log(
  `bench:worker — ${JOBS} order syncs over ${STORES} stores, sandbox limit lifted, worker concurrency 16 per process\n`,
);
const rows: Row[] = [];

// The queue's own bound: a bare BullMQ worker whose processor does nothing.
{
  const prefix = "bench-bare";
  const queue = new Queue(QUEUE.sync, { connection: redis, prefix });
  for (let i = 0; i < JOBS; i += 1000) {
    await queue.addBulk(
      Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({
        name: "noop",
        data: { i: i + k },
        opts: { removeOnComplete: true },
      })),
    );
  }
  const children = spawnWorkers(1, { REDIS_URL: redisServer.url, PREFIX: prefix }, [
    "dist/bench-bare-worker.mjs",
  ]);
  rows.push(
    await measure(
      "bare BullMQ worker, no-op (1 process)",
      children,
      async () => JOBS - (await queue.count()) - (await queue.getActiveCount()),
    ),
  );
  await queue.close();
}

// The floor: the same BullMQ worker doing only the external work every exactly-once connector
// does per order (bench/floor-worker.ts), on each database: what the connector's own code adds
// is above it.
for (const database of DATABASES) {
  const prefix = `bench-floor-${database}`;
  const dir = mkdtempSync(join(tmpdir(), "bench-floor-"));
  const target: Record<string, string> =
    database === "postgres"
      ? { DATABASE_URL: await createTestDatabase(postgres?.url as string) }
      : { DATABASE_PATH: join(dir, "floor.sqlite") };
  const run = nextRun();
  const queue = new Queue(QUEUE.sync, { connection: redis, prefix });
  for (let i = 0; i < JOBS; i += 1000) {
    const jobs = [];
    for (let k = i; k < Math.min(i + 1000, JOBS); k++) {
      const { storeId, order } = run.order(k);
      const mapped = mapOrder(order, {
        storeId: storeId as ProviderStoreId,
        currency: "USD",
        protectionVariantIds: [],
        locationMap: {},
        defaultLocationId: null,
      });
      if (!mapped.ok)
        throw new Error(`the floor's order did not map: ${mapped.errors[0]?.message}`);
      await redis.set(
        `${prefix}:floor-body:${order.shop}:${order.id}`,
        JSON.stringify(mapped.order),
      );
      jobs.push({
        name: "sync",
        data: { shop: order.shop, orderId: order.id, storeId },
        opts: { removeOnComplete: true },
      });
    }
    await queue.addBulk(jobs);
  }
  const before = sandbox.state.orders.size;
  const children = spawnWorkers(
    1,
    {
      REDIS_URL: redisServer.url,
      PREFIX: prefix,
      ...target,
      PROVIDER_BASE_URL: sandbox.url,
      PROVIDER_AUTH_URL: sandbox.authUrl,
      PROVIDER_AUDIENCE: sandbox.audience,
      PROVIDER_CLIENT_ID: sandbox.clientId,
      PROVIDER_CLIENT_SECRET: sandbox.clientSecret,
    },
    ["dist/bench-floor-worker.mjs"],
  );
  rows.push(
    await measure(
      `floor: the external work alone, ${database === "postgres" ? "Postgres" : "SQLite"} (1 process)`,
      children,
      async () => sandbox.state.orders.size - before,
    ),
  );
  // A floor whose jobs failed after the provider's answer did not do the work it stands for.
  const [failed] = await queue.getFailed(0, 0);
  if (failed) throw new Error(`bench:worker: the floor's jobs failed: ${failed.failedReason}`);
  await queue.close();
  rmSync(dir, { recursive: true, force: true });
}

for (const processes of PROCESSES) {
  for (const database of DATABASES) {
    const prefix = `bench-w${processes}-${database}`;
    const dir = mkdtempSync(join(tmpdir(), "bench-worker-"));
    const target =
      database === "postgres"
        ? await createTestDatabase(postgres?.url as string)
        : join(dir, "c.sqlite");
    const ctx = await prepare(prefix, target);
    const before = sandbox.state.orders.size;
    const children = spawnWorkers(
      processes,
      {
        REDIS_URL: redisServer.url,
        REDIS_PREFIX: prefix,
        ...(database === "postgres" ? { DATABASE_URL: target } : { DATABASE_PATH: target }),
        PROVIDER_BASE_URL: sandbox.url,
        PROVIDER_AUTH_URL: sandbox.authUrl,
        PROVIDER_AUDIENCE: sandbox.audience,
        PROVIDER_RATE_LIMIT: "1000000000",
        WORKER_CONCURRENCY: "16",
        LOG_LEVEL: args["log-level"],
      },
      ["dist/main.mjs", "--role", "worker"],
    );
    rows.push(
      await measure(
        `connector sync worker, ${database === "postgres" ? "Postgres" : "SQLite"} (${processes} process${processes > 1 ? "es" : ""}${logged})`,
        children,
        async () => sandbox.state.orders.size - before,
      ),
    );
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const bound = rows[0]?.jobsPerSecond ?? 1;
// CPU is also given as a multiple of the bare worker's in the same run: the machine's speed
// moves from minute to minute (a shared host), and the multiple moves much less with it.
const bare = rows[0];
const times = (ms: number, bareMs: number | undefined, row: Row) =>
  row === bare || !bareMs || !Number.isFinite(ms) ? "" : ` (${(ms / bareMs).toFixed(1)}×)`;
console.log(
  "| run | jobs/s | share of bare bound | worker CPU ms per job (× the bare worker's) | the same, started (after the first 10 %) | sandbox CPU ms per job | Redis commands per job (in scripts too) | Postgres statements per job | Postgres CPU ms per job | peak RSS per process (MB) |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.name} | ${r.jobsPerSecond.toFixed(0)} | ${((r.jobsPerSecond / bound) * 100).toFixed(0)}% | ${r.cpuMsPerJob.toFixed(2)}${times(r.cpuMsPerJob, bare?.cpuMsPerJob, r)} | ${Number.isFinite(r.steadyCpuMsPerJob) ? `${r.steadyCpuMsPerJob.toFixed(2)}${times(r.steadyCpuMsPerJob, bare?.steadyCpuMsPerJob, r)}` : "—"} | ${r.sandboxCpuMsPerJob.toFixed(2)} | ${r.redisCallsPerJob.toFixed(1)} | ${r.pgStatementsPerJob.toFixed(1)} | ${r.pgCpuMsPerJob.toFixed(2)} | ${r.peakRssMb.toFixed(0)} |`,
  );
}
console.log(
  "\nSQLite per synced one-line order (from the code path): the intent insert (committed before the provider call), then one transaction with the order link, its line-item link, the intent completion and the synced mark: 2 transactions, each a savepoint in the one commit of the writes of its event-loop turn (group commit).",
);
if (otel) console.log(`spans received by the OTLP sink: ${otel.spans()}`);
await sandbox.close();
forgetPostgres();
await postgres?.stop();
redis.disconnect();
release(redisServer.process);
await redisServer.stop();
process.exit(0);
