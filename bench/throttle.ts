/**
 * npm run bench:throttle — the per-store limiter against the baseline a user would otherwise
 * build (the same workers with BullMQ's queue limiter set to the provider limit), one run, same
 * workload, against the sandbox with a scaled window (100 per 2 s by default).
 *
 * Workload: 20 stores; one hot store with a backlog of orders being backfilled (bulk priority);
 * live orders arriving as signed webhooks on every store, the hot one included; the sandbox
 * spending 20 % of the hot store's budget out of band, as another client of that store would.
 */

import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import { Worker } from "bullmq";
import type { Connector } from "../src/app/connector.ts";
import { composeWebApp } from "../src/app/web.ts";
import { signWebhook } from "../src/cli/webhook-command.ts";
import { type FeedItem, feedAtBudget } from "../src/engine/budget-feeder.ts";
import { createSyncProcessor } from "../src/engine/sync-processor.ts";
import { duplicateConnection } from "../src/lib/redis-keys.ts";
import { startRedisServer } from "../src/lib/redis-server.ts";
import type { SyncJobData } from "../src/queue/jobs.ts";
import { QUEUE, queueOptions } from "../src/queue/names.ts";
import type { ShopDomain, ShopifyOrderId } from "../src/sync/source-order.ts";
import { sourceOrder } from "../test/helpers/source-order-factory.ts";
import { needChild, release } from "./children.ts";
import { benchContext } from "./context.ts";
import { noStoreLimiter } from "./no-store-limiter.ts";

// `--scenario flash-sale`: a burst of live orders on one store (bench/flash-sale.ts).
if (process.argv.includes("flash-sale")) {
  const { flashSaleBench } = await import("./flash-sale.ts");
  await flashSaleBench();
  process.exit(0);
}

const { values: args } = parseArgs({
  options: {
    scenario: { type: "string", default: "steady" },
    backlog: { type: "string", default: "2000" },
    stores: { type: "string", default: "20" },
    limit: { type: "string", default: "100" },
    "window-ms": { type: "string", default: "2000" },
    "live-every-ms": { type: "string", default: "100" },
    "margin-ms": { type: "string" },
  },
});
const BACKLOG = Number(args.backlog);
const STORES = Number(args.stores);
const LIMIT = Number(args.limit);
const WINDOW = Number(args["window-ms"]);
const LIVE_EVERY = Number(args["live-every-ms"]);
const SECRET = "bench-secret";
const HOT = 1001;
const shopOf = (store: number) => `store-${store}.myshopify.com`;
const storeIds = Array.from({ length: STORES }, (_, i) => HOT + i);

interface RunResult {
  name: string;
  hotUtilization: number;
  hotSaturatedUtilization: number;
  quietUtilizationMax: number;
  rateLimited: number;
  rateLimitedAfterFirstWindow: number;
  hotLive: number[];
  quietLive: number[];
  movesPerCall: number;
  drainMs: number;
}

async function run(
  name: string,
  redisUrl: string,
  mode: "connector" | "baseline",
  /** The idle reference: no backlog, no other client, a fixed number of live orders. */
  idle?: { liveOrders: number },
): Promise<RunResult> {
  const backlog = idle ? 0 : BACKLOG;
  const sandbox: SandboxHandle = await startSandbox({
    stores: storeIds,
    rateLimit: LIMIT,
    windowMs: WINDOW,
  });
  const dir = mkdtempSync(join(tmpdir(), "bench-throttle-"));
  const envSettings = {
    DATABASE_PATH: join(dir, "c.sqlite"),
    SHOPIFY_API_SECRET: SECRET,
    PROVIDER_RATE_LIMIT: String(LIMIT),
    PROVIDER_RATE_WINDOW_MS: String(WINDOW),
    ...(args["margin-ms"] ? { PROVIDER_RATE_MARGIN_MS: args["margin-ms"] } : {}),
    SYNC_RETRY_DELAY_MS: "200",
    LOG_LEVEL: "silent",
  };
  const ctx: Connector = await benchContext({
    env: envSettings,
    redisUrl,
    prefix: `bench-${randomUUID().slice(0, 8)}`,
    provider: { ...sandbox, baseUrl: sandbox.url },
    shops: storeIds.map((store) => ({ shop: shopOf(store), storeId: store })),
  });
  const web = composeWebApp(ctx);
  let moves = 0;
  let calls = 0;
  const processor = createSyncProcessor({
    snapshots: ctx.snapshots,
    queues: ctx.queues,
    shops: ctx.shops,
    links: ctx.links,
    limiter: mode === "connector" ? ctx.limiter : noStoreLimiter(),
    providerFor: (shop) => ctx.providers.for(shop),
    logger: ctx.logger,
    metrics: {
      jobDone: () => {},
      providerCall: (status) => {
        calls++;
        if (status === 429) moves++;
      },
      limiterWait: () => {
        moves++;
      },
      lag: () => {},
    },
  });
  const workers = [0, 1].map(
    () =>
      new Worker<SyncJobData>(QUEUE.sync, processor, {
        ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
        concurrency: 16,
        ...(mode === "baseline" ? { limiter: { max: LIMIT, duration: WINDOW } } : {}),
      }),
  );

  // The hot store's backlog at bulk priority. The connector's backfill feeds it at the pace of
  // the budget (feedAtBudget, as `connector backfill` does); the baseline queues it all at once,
  // as a user with BullMQ's queue limiter would.
  const backlogItems: FeedItem[] = [];
  for (let i = 0; i < backlog; i++) {
    const order = sourceOrder({
      shop: shopOf(HOT) as ShopDomain,
      id: String(1_000_000 + i) as ShopifyOrderId,
    });
    await ctx.snapshots.storeOrder(order);
    backlogItems.push({
      shop: order.shop,
      orderId: order.id,
      trigger: "backfill",
      receivedAt: Date.now(),
    });
  }
  const feeding =
    mode === "connector"
      ? feedAtBudget({ limiter: ctx.limiter, queues: ctx.queues }, HOT, backlogItems)
      : Promise.all(
          backlogItems.map((item) => ctx.queues.enqueueSync({ ...item, priority: "bulk" })),
        ).then((jobs) => jobs.length);
  const started = Date.now();
  const oobAt: number[] = [];
  const oob = setInterval(
    () => {
      if (idle) return;
      sandbox.consume(HOT, 1);
      oobAt.push(Date.now());
    },
    (WINDOW / LIMIT) * 5,
  );
  const sent = new Map<string, { at: number; store: number }>();
  let seq = 0;
  const live = setInterval(() => {
    const store = seq % 4 === 0 ? HOT : (storeIds[1 + (seq % (STORES - 1))] as number);
    const id = 9_000_000 + seq++;
    const order = sourceOrder({ id: String(id) as ShopifyOrderId });
    const body = JSON.stringify({
      id,
      name: `#${id}`,
      order_number: id,
      email: "live@example.com",
      created_at: order.createdAt,
      updated_at: new Date().toISOString(),
      currency: "USD",
      presentment_currency: "USD",
      taxes_included: false,
      current_total_price_set: {
        shop_money: { amount: "26.60", currency_code: "USD" },
        presentment_money: { amount: "26.60", currency_code: "USD" },
      },
      current_total_tax_set: { shop_money: { amount: "1.60", currency_code: "USD" } },
      current_shipping_price_set: { shop_money: { amount: "5.00", currency_code: "USD" } },
      current_subtotal_price_set: { shop_money: { amount: "20.00", currency_code: "USD" } },
      customer: { id: 1, email: "live@example.com", first_name: "L", last_name: "V" },
      billing_address: {
        address1: "1 Main St",
        city: "Springfield",
        province_code: "IL",
        zip: "62701",
        country_code: "US",
      },
      line_items: [
        {
          id: id * 10,
          title: "Item",
          quantity: 1,
          current_quantity: 1,
          sku: "SKU",
          price_set: { shop_money: { amount: "20.00" } },
          tax_lines: [{ price_set: { shop_money: { amount: "1.60" } } }],
        },
      ],
    });
    const signed = signWebhook({
      topic: "orders/create",
      shop: shopOf(store),
      body,
      secret: SECRET,
    });
    sent.set(String(id), { at: Date.now(), store });
    void web.app.request("/webhooks/shopify", { method: "POST", headers: signed.headers, body });
  }, LIVE_EVERY);

  // Drain: the backlog is done and the live orders sent so far are all at the provider.
  let liveStopped = false;
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const hotDone = sandbox.state.orders.all.filter(
      (o) => o.storeId === HOT && Number(o.sourceOrderId) < 9_000_000,
    ).length;
    if (!liveStopped && (idle ? seq >= idle.liveOrders : hotDone >= backlog)) {
      clearInterval(live);
      liveStopped = true;
    }
    const counts = await ctx.queues.sync.getJobCounts(
      "waiting",
      "active",
      "delayed",
      "prioritized",
    );
    if (liveStopped && Object.values(counts).reduce((a, b) => a + b, 0) === 0) {
      await feeding;
      break;
    }
    if (Date.now() - started > 15 * 60_000) throw new Error(`${name}: did not drain in 15 minutes`);
  }
  const drainMs = Date.now() - started;
  clearInterval(oob);

  const created = new Map(
    sandbox.state.orders.all.map((o) => [o.sourceOrderId, Date.parse(o.createdOn)]),
  );
  const lat = (hot: boolean) =>
    [...sent.entries()]
      .filter(([, s]) => (s.store === HOT) === hot)
      .map(([id, s]) => (created.get(id) ?? Number.NaN) - s.at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
  const utilization = (store: number) => {
    const own = sandbox.state.admittedFor(store).map((a) => a.at);
    if (own.length < 2) return 0;
    const span = Math.max(...own) - Math.min(...own);
    const oobShare = store === HOT ? span / ((WINDOW / LIMIT) * 5) : 0;
    return (own.length + oobShare) / ((span / WINDOW) * LIMIT);
  };
  // While saturated: from the end of the first window to the last backlog order's arrival, every
  // request the sandbox admitted for the hot store (ours, live and backfill, and the other
  // client's) against the limit over that span.
  const saturatedUtilization = () => {
    const hot = sandbox.state.admittedFor(HOT);
    const backlogDone = Math.max(
      ...sandbox.state.orders.all
        .filter((o) => o.storeId === HOT && Number(o.sourceOrderId) < 9_000_000)
        .map((o) => Date.parse(o.createdOn)),
    );
    const from = Math.min(...hot.map((a) => a.at)) + WINDOW;
    if (!(backlogDone > from)) return Number.NaN;
    const admitted =
      hot.filter((a) => a.at >= from && a.at <= backlogDone).length +
      oobAt.filter((t) => t >= from && t <= backlogDone).length;
    return admitted / (((backlogDone - from) / WINDOW) * LIMIT);
  };
  // BENCH_DIAG=1: what the sandbox's window held at each 429 on the hot store.
  if (process.env.BENCH_DIAG && !idle) {
    const hot = sandbox.state.arrivals.filter((a) => a.storeId === HOT);
    for (const a of hot.filter((x) => x.status === 429)) {
      const ours = hot.filter((x) => x.status !== 429 && x.at > a.at - WINDOW && x.at <= a.at);
      const others = oobAt.filter((t) => t > a.at - WINDOW && t <= a.at);
      const prev = hot.filter((x) => x.at < a.at).at(-1);
      const lastOob = oobAt.filter((t) => t <= a.at).at(-1);
      console.log(
        `${name} 429 at +${a.at - started} ms: window ours ${ours.length} + other ${others.length}; previous arrival ${prev ? a.at - prev.at : "-"} ms before, last other ${lastOob !== undefined ? a.at - lastOob : "-"} ms before`,
      );
    }
  }
  const firstAt = Math.min(...sandbox.state.arrivals.map((a) => a.at));
  const result: RunResult = {
    name,
    hotUtilization: utilization(HOT),
    hotSaturatedUtilization: idle ? Number.NaN : saturatedUtilization(),
    quietUtilizationMax: Math.max(...storeIds.slice(1).map(utilization)),
    rateLimited: sandbox.state.counters.rateLimited,
    rateLimitedAfterFirstWindow: sandbox.state.arrivals.filter(
      (a) => a.status === 429 && a.at > firstAt + WINDOW,
    ).length,
    hotLive: lat(true),
    quietLive: lat(false),
    movesPerCall: calls > 0 ? moves / calls : 0,
    drainMs,
  };
  await Promise.all(workers.map((w) => w.close()));
  await web.close();
  await ctx.close();
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
  return result;
}

const pct = (values: number[], p: number) =>
  values[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? Number.NaN;

const redis = await startRedisServer();
needChild(redis.process, "redis-server");
console.log(
  `bench:throttle — ${STORES} stores, hot backlog ${BACKLOG}, limit ${LIMIT} per ${WINDOW} ms (slot ${WINDOW / LIMIT} ms), live order every ${LIVE_EVERY} ms, 20% of the hot store's budget spent out of band\n`,
);
const idle = await run("idle", redis.url, "connector", { liveOrders: 60 });
console.log(
  `idle reference (no backlog, no other client): live p50 / p95 ${pct(idle.quietLive, 50).toFixed(0)} / ${pct(idle.quietLive, 95).toFixed(0)} ms on quiet stores, ${pct(idle.hotLive, 50).toFixed(0)} / ${pct(idle.hotLive, 95).toFixed(0)} ms on the hot store\n`,
);
const results = [
  await run("connector (per-store limiter)", redis.url, "connector"),
  await run("baseline (BullMQ queue limiter)", redis.url, "baseline"),
];
release(redis.process);
await redis.stop();
const rows: [string, (r: RunResult) => string][] = [
  [
    "hot store utilization while saturated (share of limit, incl. out-of-band)",
    // No span to measure when the backlog was done within the first window (a tiny run).
    (r) =>
      Number.isNaN(r.hotSaturatedUtilization)
        ? "— (done in the first window)"
        : `${(r.hotSaturatedUtilization * 100).toFixed(1)}%`,
  ],
  [
    "hot store utilization, whole run incl. ramp-up and tail",
    (r) => `${(r.hotUtilization * 100).toFixed(1)}%`,
  ],
  [
    "429s received (total / after the first window)",
    (r) => `${r.rateLimited} / ${r.rateLimitedAfterFirstWindow}`,
  ],
  [
    "live p50 / p95, hot store (ms)",
    (r) => `${pct(r.hotLive, 50).toFixed(0)} / ${pct(r.hotLive, 95).toFixed(0)}`,
  ],
  [
    "live p50 / p95, quiet stores (ms)",
    (r) => `${pct(r.quietLive, 50).toFixed(0)} / ${pct(r.quietLive, 95).toFixed(0)}`,
  ],
  ["queue moves per provider call", (r) => r.movesPerCall.toFixed(2)],
  ["total time to drain (s)", (r) => (r.drainMs / 1000).toFixed(1)],
];
const width = Math.max(...rows.map(([label]) => label.length));
console.log(`| ${"".padEnd(width)} | ${results.map((r) => r.name).join(" | ")} |`);
console.log(
  `|${"-".repeat(width + 2)}|${results.map((r) => "-".repeat(r.name.length + 2)).join("|")}|`,
);
for (const [label, cell] of rows) {
  console.log(
    `| ${label.padEnd(width)} | ${results.map((r) => cell(r).padEnd(r.name.length)).join(" | ")} |`,
  );
}
process.exit(0);
