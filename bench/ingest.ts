/**
 * npm run bench:ingest — signed ~4 KB order webhooks against the receiver, next to a bare Hono
 * "200 OK" route on the same server (the physical bound) and a floor route doing only what any
 * receiver of a signed webhook must (read the body, check its HMAC, parse it, one Redis write),
 * in one run. Each webhook is a distinct order with its own webhook id, signed with the app
 * secret like Shopify's. The receiver runs as 1 and as 2 web processes (WEB_PROCESSES's cluster),
 * each with its own bound.
 *
 * BENCH_SECONDS (10) per row; BENCH_PROCESSES ("1,2"); BENCH_PROFILE=1 writes a --cpu-prof of
 * every receiver process to a fresh temp directory, printed at the end. A receiver or Redis that
 * dies ends the bench at once with a line naming it (bench/children.ts). `--otel` (or
 * BENCH_OTEL=1): the receivers export traces to a local OTLP sink (bench/otel-sink.ts); without
 * it traces are off, so on and off can be compared.
 */
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { startRedisServer } from "../src/lib/redis-server.ts";
import { createTestDatabase, startPostgres } from "../test/helpers/postgres.ts";
import { needChild, release, stopAtExit } from "./children.ts";
import { otelFromArgs } from "./otel-sink.ts";
import { PRODUCTION_ENV, PRODUCTION_NODE_FLAGS } from "./production.ts";

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const PROCESS_COUNTS = (process.env.BENCH_PROCESSES ?? "1,2").split(",").map(Number);
const PROFILE_DIR = process.env.BENCH_PROFILE
  ? mkdtempSync(join(tmpdir(), "bench-ingest-prof-"))
  : undefined;
const CONNECTIONS = 64;
const otel = await otelFromArgs(process.argv.includes("--otel") || process.env.BENCH_OTEL === "1");
const base = JSON.parse(
  readFileSync(new URL("../examples/orders-create.json", import.meta.url), "utf8"),
);
// Trim the example to about 4 KB, the size the issue names.
base.line_items = base.line_items.slice(0, 1);
const template = JSON.stringify(base);

// The receiver runs as a production bundle, like `npm run start:prod` (the Dockerfile's flags).
const { bundle } = await import("../scripts/bundle.ts");
await bundle(["bench/ingest-server.ts"], { outfile: "dist/bench-ingest-server.mjs" });

type RedisMode = { appendonly: false } | { appendonly: true; appendfsync: "always" | "everysec" };

// BENCH_DATABASE=postgres: the receivers' link store on a private Postgres (the receiver reads
// the shop's status from it, cached 5 s).
const postgres = process.env.BENCH_DATABASE === "postgres" ? await startPostgres() : undefined;
// SIGQUIT: Postgres's immediate shutdown, its backends with it.
const forgetPostgres = postgres
  ? stopAtExit(() => process.kill(postgres.pid(), "SIGQUIT"))
  : () => false;

async function startReceiver(mode: RedisMode, processes: number) {
  const redis = await startRedisServer(mode);
  needChild(redis.process, "redis-server");
  // On SQLite, the file's directory, removed with the receiver.
  let databaseDir: string | undefined;
  let databasePath: string;
  if (postgres) databasePath = await createTestDatabase(postgres.url);
  else {
    databaseDir = mkdtempSync(join(tmpdir(), "bench-ingest-"));
    databasePath = join(databaseDir, "c.sqlite");
  }
  const server = spawn(
    process.execPath,
    [
      ...(PROFILE_DIR ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] : []),
      ...PRODUCTION_NODE_FLAGS,
      "dist/bench-ingest-server.mjs",
      redis.url,
      databasePath,
      String(processes),
    ],
    { env: { ...process.env, ...PRODUCTION_ENV }, stdio: ["ignore", "pipe", "inherit"] },
  );
  needChild(server, `receiver (${processes} web process${processes > 1 ? "es" : ""})`);
  // The primary (when there is one) and every web process: CPU is counted over all of them.
  const { port, pids } = await new Promise<{ port: number; pids: number[] }>((resolve) => {
    server.stdout.on("data", (chunk: Buffer) => {
      const match = /listening (\d+) pids ([\d,]+)/.exec(chunk.toString());
      if (match?.[1] && match[2]) {
        resolve({ port: Number(match[1]), pids: match[2].split(",").map(Number) });
      }
    });
  });
  const probe = new Redis(redis.url);
  return {
    port,
    pids,
    server,
    probe,
    async stop() {
      probe.disconnect();
      release(server);
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
      release(redis.process);
      await redis.stop();
      if (databaseDir) rmSync(databaseDir, { recursive: true, force: true });
    },
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

let seq = 0;
function webhookRequest(path = "/webhooks/shopify") {
  const id = 6_000_000_000 + seq++;
  const body = template.replace('"id":5906323456123', `"id":${id}`);
  return {
    method: "POST" as const,
    path,
    body,
    headers: {
      "content-type": "application/json",
      "x-shopify-topic": "orders/create",
      "x-shopify-hmac-sha256": createHmac("sha256", "bench-secret").update(body).digest("base64"),
      "x-shopify-shop-domain": "bench-shop.myshopify.com",
      "x-shopify-api-version": "2026-10",
      "x-shopify-webhook-id": `w-${id}`,
      "x-shopify-event-id": `e-${id}`,
    },
  };
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds the processes have used so far (utime + stime from /proc). */
function processCpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

async function redisCounters(probe: Redis) {
  const info = await probe.info();
  const read = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return {
    cpu: read("used_cpu_user") + read("used_cpu_sys"),
    commands: read("total_commands_processed"),
  };
}

async function load(
  receiver: Receiver,
  name: string,
  path: string,
  overallRate?: number,
): Promise<Row> {
  const { pids, probe } = receiver;
  const cpuBefore = processCpuSeconds(pids);
  const redisBefore = await redisCounters(probe);
  const result = await autocannon({
    url: `http://127.0.0.1:${receiver.port}`,
    connections: CONNECTIONS,
    duration: DURATION,
    ...(overallRate ? { overallRate } : {}),
    requests: [
      path === "/bare"
        ? {
            method: "POST",
            path: "/bare",
            body: template,
            headers: { "content-type": "application/json" },
          }
        : { setupRequest: (req: object) => ({ ...req, ...webhookRequest(path) }) },
    ],
  });
  const errors = result.errors + result.timeouts + result.non2xx;
  const redisAfter = await redisCounters(probe);
  const served = Math.max(1, result.requests.total);
  return {
    name,
    receiverCpuMs: ((processCpuSeconds(pids) - cpuBefore) * 1000) / served,
    redisCpuMs: ((redisAfter.cpu - redisBefore.cpu) * 1000) / served,
    redisCommands: (redisAfter.commands - redisBefore.commands - 1) / served,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors,
  };
}

interface Row {
  name: string;
  /** The bare route's req/s on the same setup: what this row is a share of. */
  bound?: number;
  receiverCpuMs: number;
  redisCpuMs: number;
  redisCommands: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

console.log(
  `bench:ingest — ${Buffer.byteLength(template)} byte order webhooks, ${CONNECTIONS} connections, ${DURATION} s per row, receiver (production bundle) as ${PROCESS_COUNTS.join(" and ")} web processes, load generator in another process\n`,
);
const rows: Row[] = [];
let queued = 0;
const modes: [string, RedisMode][] = [
  ["Redis without persistence", { appendonly: false }],
  ["Redis AOF appendfsync always (recommended)", { appendonly: true, appendfsync: "always" }],
];
for (const processes of PROCESS_COUNTS) {
  const label = processes === 1 ? "1 process" : `${processes} processes`;
  let bound = 0;
  for (const [modeLabel, mode] of modes) {
    const receiver = await startReceiver(mode, processes);
    if (!bound) {
      const bare = await load(receiver, `bare Hono 200 OK (bound), ${label}`, "/bare");
      bound = bare.rps;
      rows.push({ ...bare, bound });
      const floor = await load(
        receiver,
        `floor: body, HMAC, JSON.parse, one Redis write, ${label}`,
        "/floor",
      );
      rows.push({ ...floor, bound });
    }
    const full = await load(
      receiver,
      `receiver, ${label}, max rate, ${modeLabel}`,
      "/webhooks/shopify",
    );
    const paced = await load(
      receiver,
      `receiver, ${label}, at 80% of its max, ${modeLabel}`,
      "/webhooks/shopify",
      Math.floor(full.rps * 0.8),
    );
    rows.push({ ...full, bound }, { ...paced, bound });
    queued +=
      Number(await receiver.probe.zcard("bench-ingest:sync:prioritized")) +
      Number(await receiver.probe.llen("bench-ingest:sync:wait"));
    await receiver.stop();
  }
}
console.log(
  "| run | req/s | p50 ms | p99 ms | errors | share of bound | receiver CPU ms/req | Redis CPU ms/req | Redis commands/req |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const row of rows) {
  console.log(
    `| ${row.name} | ${row.rps.toFixed(0)} | ${row.p50} | ${row.p99} | ${row.errors} | ${((row.rps / (row.bound || 1)) * 100).toFixed(0)}% | ${row.receiverCpuMs.toFixed(3)} | ${row.redisCpuMs.toFixed(3)} | ${row.redisCommands.toFixed(1)} |`,
  );
}
console.log(`\nsync jobs queued by the run (every accepted webhook is one): ${queued}`);
if (otel) console.log(`spans received by the OTLP sink: ${otel.spans()}`);
if (PROFILE_DIR) console.log(`CPU profiles of the receiver processes: ${PROFILE_DIR}`);
forgetPostgres();
await postgres?.stop();
process.exit(0);
