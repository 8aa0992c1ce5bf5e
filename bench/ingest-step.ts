/**
 * `npx tsx bench/ingest-step.ts` — the receiver's durable step alone (`WebhookIngest.ingest`:
 * parse, normalize, then on one Redis one script for the dedupe mark, the newer-only snapshot,
 * the arrival count and the job) and its parts, with the parts of the three-call path a Redis
 * Cluster takes (dedupe + snapshot script, BullMQ's add, dedupe mark), in this process against a private redis-server, 32 webhooks in flight. Reports CPU µs
 * of this process per call, best of four rounds of 10,000: process CPU time barely moves when
 * another process shares the machine, unlike requests per second. No HTTP, no HMAC.
 */
import { readFileSync } from "node:fs";
import { OrderReceiver } from "../src/ingest/receive-order.ts";
import { orderMarkId, SnapshotStore } from "../src/ingest/snapshot-store.ts";
import { WebhookIngest } from "../src/ingest/webhook-ingest.ts";
import { startRedisServer } from "../src/lib/redis-server.ts";
import { createRedis } from "../src/queue/connection.ts";
import { OrderQueues } from "../src/queue/order-queues.ts";
import { normalizeWebhook, parseShopifyJson } from "../src/shopify/index.ts";
import type { ShopDomain, SourceOrder } from "../src/sync/source-order.ts";

const IN_FLIGHT = 32;
const CALLS = 10_000;
const ROUNDS = 4;

const base = JSON.parse(
  readFileSync(new URL("../examples/orders-create.json", import.meta.url), "utf8"),
);
base.line_items = base.line_items.slice(0, 1);
const template = JSON.stringify(base);
const shop = "bench-shop.myshopify.com" as ShopDomain;

const server = await startRedisServer();
const redis = createRedis(server.url, "ingest");
await new Promise((resolve) => redis.once("ready", resolve));
const prefix = "bench-step";
const snapshots = new SnapshotStore(redis, { prefix });
const queues = new OrderQueues(redis, prefix);
const receiver = new OrderReceiver(redis);
const ingest = new WebhookIngest({
  redis,
  prefix,
  snapshots,
  queues,
  shops: { shopStatus: async () => "active" },
  lifecycle: {
    confirmUninstalled: async () => "uninstalled" as const,
    appUninstalled: async () => {},
    shopUpdated: async () => {},
    privacy: async () => {},
  },
});

let seq = 0;
const body = () => template.replace('"id":5906323456123', `"id":${6_000_000_000 + seq++}`);
const parsed = normalizeWebhook("orders/create", shop, parseShopifyJson(template));
if (parsed.kind !== "order") throw new Error("the example is not an order");
const order: SourceOrder = parsed.order;

const steps: Record<string, () => Promise<unknown>> = {
  "whole step (WebhookIngest.ingest)": () => {
    const n = seq++;
    return ingest.ingest({
      shop,
      topic: "orders/create",
      webhookId: `w-${n}`,
      eventId: `e-${n}`,
      triggeredAt: null,
      rawBody: body(),
    });
  },
  "parse + normalize": async () =>
    normalizeWebhook("orders/create", shop, parseShopifyJson(body())),
  "one script: dedupe, snapshot, count, job (OrderReceiver)": async () => {
    const id = String(seq++);
    const plan = await queues.liveJobPlan(shop, id);
    if (!plan) throw new Error("no plan on one Redis");
    return receiver.receive(snapshots.orderWrite({ ...order, id } as SourceOrder), {
      ttlMs: snapshots.ttlMs,
      liveAt: Date.now(),
      seen: { id: orderMarkId("orders/create", `r-${id}`), ttlSeconds: 60 },
      plan,
      data: { shop, orderId: id, priority: "live", trigger: "orders/create", receivedAt: 0 },
    });
  },
  "dedupe + snapshot script": () => {
    const id = String(seq++);
    return snapshots.storeOrder({ ...order, id } as SourceOrder, {
      live: true,
      seen: { id: orderMarkId("orders/create", `s-${id}`), ttlSeconds: 60 },
    });
  },
  "BullMQ add (enqueueSync)": () =>
    queues.enqueueSync({
      shop,
      orderId: String(seq++),
      priority: "live",
      trigger: "orders/create",
      receivedAt: Date.now(),
    }),
  "dedupe mark (SET EX)": () => redis.set(`${prefix}:mark:${seq++}`, "1", "EX", 60),
};

async function run(step: () => Promise<unknown>, calls: number) {
  let left = calls;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (left-- > 0) await step();
    }),
  );
}

console.log(`| part of the durable step | CPU µs per call (best of ${ROUNDS} × ${CALLS}) |`);
console.log("|---|---|");
for (const [name, step] of Object.entries(steps)) {
  await run(step, 2_000);
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.cpuUsage();
    await run(step, CALLS);
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / CALLS);
  }
  console.log(`| ${name} | ${best.toFixed(1)} |`);
}
redis.disconnect();
await queues.close();
await server.stop();
process.exit(0);
