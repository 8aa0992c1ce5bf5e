/**
 * npm run bench:ingest — signed ~4 KB order webhooks against the receiver, next to a bare Hono
 * "200 OK" route on the same server (the physical bound), in one run. Each webhook is a distinct
 * order with its own webhook id, signed with the app secret like Shopify's.
 */
import { spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import { startRedisServer } from "../src/lib/redis-server.ts";

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 64;
const base = JSON.parse(
  readFileSync(new URL("../examples/orders-create.json", import.meta.url), "utf8"),
);
// Trim the example to about 4 KB, the size the issue names.
base.line_items = base.line_items.slice(0, 1);
const template = JSON.stringify(base);

const redis = await startRedisServer();
const server = spawn(
  process.execPath,
  [
    ...(process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"] : []),
    "--import",
    "tsx",
    "bench/ingest-server.ts",
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

async function load(name: string, path: string, overallRate?: number) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
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
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors,
  };
}

console.log(
  `bench:ingest — ${Buffer.byteLength(template)} byte order webhooks, ${CONNECTIONS} connections, ${DURATION} s per row, receiver in its own process, load generator in another\n`,
);
const bare = await load("bare Hono 200 OK (bound)", "/bare");
const full = await load("receiver, max rate", "/webhooks/shopify");
const paced = await load(
  "receiver at 80% of its max",
  "/webhooks/shopify",
  Math.floor(full.rps * 0.8),
);
const queued = await new Promise<number>((resolve) => {
  import("ioredis").then(async ({ Redis }) => {
    const r = new Redis(redis.url);
    resolve(
      Number(await r.zcard("bench-ingest:sync:prioritized")) +
        Number(await r.llen("bench-ingest:sync:wait")),
    );
    r.disconnect();
  });
});
console.log("| run | req/s | p50 ms | p99 ms | errors | share of bound |");
console.log("|---|---|---|---|---|---|");
for (const row of [bare, full, paced]) {
  console.log(
    `| ${row.name} | ${row.rps.toFixed(0)} | ${row.p50} | ${row.p99} | ${row.errors} | ${((row.rps / bare.rps) * 100).toFixed(0)}% |`,
  );
}
console.log(`\nsync jobs queued by the run: ${queued}`);
server.kill("SIGTERM");
await new Promise((r) => server.once("exit", r));
await redis.stop();
process.exit(0);
