/**
 * npm run bench:ingest — signed ~4 KB order webhooks against the receiver, next to a bare Hono
 * "200 OK" route on the same server (the physical bound), in one run. Each webhook is a distinct
 * order with its own webhook id, signed with the app secret like Shopify's.
 */
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { startRedisServer } from "../src/lib/redis-server.ts";

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 64;
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

async function startReceiver(mode: RedisMode) {
  const redis = await startRedisServer(mode);
  const server = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"] : []),
      "--max-semi-space-size=8",
      "--max-old-space-size=160",
      "dist/bench-ingest-server.mjs",
      redis.url,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise<number>((resolve) => {
    server.stdout.on("data", (chunk: Buffer) => {
      const match = /listening (\d+)/.exec(chunk.toString());
      if (match?.[1]) resolve(Number(match[1]));
    });
  });
  const probe = new Redis(redis.url);
  return {
    port,
    server,
    probe,
    async stop() {
      probe.disconnect();
      server.kill("SIGTERM");
      await new Promise((r) => server.once("exit", r));
      await redis.stop();
    },
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

let seq = 0;
function webhookRequest() {
  const id = 6_000_000_000 + seq++;
  const body = template.replace('"id":5906323456123', `"id":${id}`);
  return {
    method: "POST" as const,
    path: "/webhooks/shopify",
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

/** CPU seconds a process has used so far (utime + stime from /proc). */
function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
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
  const { server, probe } = receiver;
  const cpuBefore = processCpuSeconds(server.pid as number);
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
        : { setupRequest: (req: object) => ({ ...req, ...webhookRequest() }) },
    ],
  });
  const errors = result.errors + result.timeouts + result.non2xx;
  const redisAfter = await redisCounters(probe);
  const served = Math.max(1, result.requests.total);
  return {
    name,
    receiverCpuMs: ((processCpuSeconds(server.pid as number) - cpuBefore) * 1000) / served,
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
  receiverCpuMs: number;
  redisCpuMs: number;
  redisCommands: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

console.log(
  `bench:ingest — ${Buffer.byteLength(template)} byte order webhooks, ${CONNECTIONS} connections, ${DURATION} s per row, receiver (production bundle) in its own process, load generator in another\n`,
);
const rows: Row[] = [];
let queued = 0;
const modes: [string, RedisMode][] = [
  ["Redis without persistence", { appendonly: false }],
  ["Redis AOF appendfsync always (recommended)", { appendonly: true, appendfsync: "always" }],
];
let bare: Row | undefined;
for (const [label, mode] of modes) {
  const receiver = await startReceiver(mode);
  if (!bare) {
    bare = await load(receiver, "bare Hono 200 OK (bound)", "/bare");
    rows.push(bare);
  }
  const full = await load(receiver, `receiver, max rate, ${label}`, "/webhooks/shopify");
  const paced = await load(
    receiver,
    `receiver at 80% of its max, ${label}`,
    "/webhooks/shopify",
    Math.floor(full.rps * 0.8),
  );
  rows.push(full, paced);
  queued +=
    Number(await receiver.probe.zcard("bench-ingest:sync:prioritized")) +
    Number(await receiver.probe.llen("bench-ingest:sync:wait"));
  await receiver.stop();
}
const bound = bare?.rps ?? 1;
console.log(
  "| run | req/s | p50 ms | p99 ms | errors | share of bound | receiver CPU ms/req | Redis CPU ms/req | Redis commands/req |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const row of rows) {
  console.log(
    `| ${row.name} | ${row.rps.toFixed(0)} | ${row.p50} | ${row.p99} | ${row.errors} | ${((row.rps / bound) * 100).toFixed(0)}% | ${row.receiverCpuMs.toFixed(3)} | ${row.redisCpuMs.toFixed(3)} | ${row.redisCommands.toFixed(1)} |`,
  );
}
console.log(`\nsync jobs queued by the run (every accepted webhook is one): ${queued}`);
process.exit(0);
