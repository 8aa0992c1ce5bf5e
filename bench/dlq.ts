/**
 * npm run bench:dlq — what the dead-letter queue's reads cost during a long outage: the queue
 * seeded with `--entries` dead letters (10,000 by default) over `--shops` shops, recorded as the
 * worker records them (`addDeadLetter`, each with the request sent, the response received and,
 * for a payload entry, the webhook body), then each read an operator runs, `--runs` times (the
 * median, min and max are printed): `connector status`'s counts, `dlq list` with and without a
 * filter, a bulk retry's matching step; last, the first count after an upgrade, when no entry has
 * its row in the index yet. A private redis-server on a free port, stopped at the end.
 *
 * `npm run bench:dlq -- --entries 100000`
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startRedisServer } from "../src/lib/redis-server.ts";
import { createDeadLetters } from "../src/ops/index.ts";
import { indexKey } from "../src/queue/dead-letter-index.ts";
import type { DeadLetterData, FailureCategory } from "../src/queue/jobs.ts";
import { deadLetterId } from "../src/queue/order-queues.ts";
import { RECONNECT_HINT } from "../src/shopify/admin-client.ts";
import type { ShopifyOrderId } from "../src/sync/source-order.ts";
import { shippedOrder } from "../test/helpers/orders.ts";
import { orderPayload } from "../test/helpers/shopify-order-builder.ts";
import { sourceLine, sourceOrder } from "../test/helpers/source-order-factory.ts";
import { needChild, release } from "./children.ts";
import { benchContext } from "./context.ts";

const { values: args } = parseArgs({
  options: {
    entries: { type: "string", default: "10000" },
    shops: { type: "string", default: "10" },
    runs: { type: "string", default: "3" },
  },
});
const ENTRIES = Number(args.entries);
const SHOPS = Number(args.shops);
const RUNS = Number(args.runs);
const shopOf = (n: number) => `dlq-bench-${n}.myshopify.com`;

const redisServer = await startRedisServer();
needChild(redisServer.process, "redis-server");
const dir = mkdtempSync(join(tmpdir(), "bench-dlq-"));
const prefix = "bench-dlq";
const ctx = await benchContext({
  env: { DATABASE_PATH: join(dir, "connector.sqlite"), LOG_LEVEL: "silent" },
  redisUrl: redisServer.url,
  prefix,
  // No request reaches a provider: the bench only reads the dead-letter queue.
  provider: {
    baseUrl: "http://127.0.0.1:9/v1",
    authUrl: "http://127.0.0.1:9/oauth",
    audience: "bench-dlq",
    clientId: "bench",
    clientSecret: "bench",
  },
  shops: [],
});

/** The mix of an outage: mostly refused requests, a third waiting for a shop's token. */
function entry(i: number): { id: string; data: DeadLetterData } {
  const shop = shopOf(i % SHOPS);
  const now = new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString();
  const base = { shop, attempts: 5, firstFailedAt: now, lastFailedAt: now };
  if (i % 20 === 0) {
    const webhookId = `bench-${i}`;
    return {
      id: deadLetterId(shop, null, webhookId),
      data: {
        ...base,
        orderId: null,
        topic: "orders/create",
        webhookId,
        reason: "webhook body could not be used: line_items[0].price is not a decimal",
        category: "payload",
        errorClass: "PayloadError",
        rawPayload: JSON.stringify(orderPayload(shippedOrder(6_000_000 + i))),
      },
    };
  }
  const orderId = String(5_000_000 + i);
  const order = sourceOrder({
    id: orderId as ShopifyOrderId,
    lineItems: [sourceLine(), sourceLine(), sourceLine()],
  });
  const config = i % 3 === 0;
  const category: FailureCategory = config ? "config" : "provider-validation";
  return {
    id: deadLetterId(shop, orderId),
    data: {
      ...base,
      orderId,
      topic: "orders/updated",
      reason: config
        ? `Shopify refused the shop's access token: ${RECONNECT_HINT} to connect it again`
        : "the provider refused the request: POST /orders answered 400: validation_error; fields fulfillmentLocationId",
      category,
      errorClass: config ? "ShopifyAuthError" : "ProviderValidationError",
      request: { method: "POST", path: "/orders", body: order },
      response: {
        status: config ? 401 : 400,
        requestId: `req-${i}`,
        body: { code: "validation_error", fields: ["fulfillmentLocationId"] },
      },
    },
  };
}

const seedStart = performance.now();
for (let i = 0; i < ENTRIES; i += 200) {
  await Promise.all(
    Array.from({ length: Math.min(200, ENTRIES - i) }, (_, k) => {
      const { id, data } = entry(i + k);
      return ctx.queues.addDeadLetter(id, data);
    }),
  );
}
const seedMs = performance.now() - seedStart;
const memory = /used_memory_human:(\S+)/.exec(await ctx.redis.info("memory"))?.[1] ?? "?";

const dlq = createDeadLetters(ctx);
const reads: { name: string; read: () => Promise<number> }[] = [
  {
    name: "counts by reason (`connector status`)",
    read: async () => (await dlq.countByReason()).total,
  },
  {
    name: "counts by reason of one shop",
    read: async () => (await dlq.countByReason(shopOf(1))).total,
  },
  {
    name: "list, first page of 50, no filter",
    read: async () => (await dlq.list({})).entries.length,
  },
  {
    name: "list --reason config, first page of 50",
    read: async () => (await dlq.list({ reason: "config" })).total,
  },
  {
    name: "list by reason text (a shop's token), first page of 50",
    read: async () => (await dlq.list({ reasonIncludes: RECONNECT_HINT })).total,
  },
  {
    name: "bulk retry's matching ids, --reason provider-validation",
    read: async () => (await dlq.matchingIds({ reason: "provider-validation" })).length,
  },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? Number.NaN;
};
console.log(
  `\nbench:dlq — ${ENTRIES} dead letters over ${SHOPS} shops (seeded in ${(seedMs / 1000).toFixed(1)} s; Redis holds ${memory}), ${RUNS} runs of each read\n`,
);
console.log("| read | entries matched | median ms | min | max |");
console.log("|---|---|---|---|---|");
// Every read once, untimed, first: the code's first run (compilation) is not a read's cost.
for (const { read } of reads) await read();
for (const { name, read } of reads) {
  let matched = 0;
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    matched = await read();
    times.push(performance.now() - start);
  }
  console.log(
    `| ${name} | ${matched} | ${median(times).toFixed(0)} | ${Math.min(...times).toFixed(0)} | ${Math.max(...times).toFixed(0)} |`,
  );
}

// As after an upgrade: entries recorded before the index have no row; the first count reads
// each in full once and fills its row in.
await ctx.redis.del(indexKey(prefix));
const start = performance.now();
await dlq.countByReason();
const firstMs = performance.now() - start;
console.log(
  `| counts by reason, first read after an upgrade (no rows yet, filled in) | ${ENTRIES} | ${firstMs.toFixed(0)} | | |`,
);

await ctx.close();
release(redisServer.process);
await redisServer.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
