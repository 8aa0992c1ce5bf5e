/**
 * npm run bench:throttle -- --scenario flash-sale [--burst N] [--window-ms W] [--variant V]
 *   [--workers K] [--limit L] [--baseline yes|no|only]
 *
 * A flash sale: N live orders arrive on one store at once, far more than the provider's L per
 * window. The provider (the sandbox, counting each request at its arrival in a rolling window)
 * accepts at most L requests in any window. "Budget used" is what it counted (ours and another
 * client's) in the whole windows from the first call, [first + kW, first + (k+1)W) for every k
 * with the window ending before the last call, over L per window: the share of the budget the
 * burst used while it still had orders to send. The window the last call falls in is left out:
 * it holds only what is left of the burst (with another client taking 20 % of each window, a
 * burst of 200 fills 2.5 windows, and no schedule can fill the third). "Rate used" divides every
 * call from the first to the last by L·(1 + s/W) instead, that window's unused rest included; it
 * is stricter for small bursts, where a window's first requests take a round trip to settle.
 * The ideal drain puts the last order at the provider (⌈N/L⌉ − 1)·W after the burst; the bound
 * the limiter is held to is ⌈N/L⌉ windows plus one slot interval (W/L) per window. Run by the connector's per-store limiter and, on the same workload, by the
 * same workers with BullMQ's queue limiter set to the provider limit.
 *
 * The provider is independent, as the real one is: the sandbox runs in its own process
 * (`connector sandbox --control`) and is read through its control API, so its work does not
 * share the connector's event loop and its clock is its own.
 *
 * Variants: `plain`; `backfill` (a backlog of bulk orders fed at the budget on the same store,
 * saturating it for a window and a half before the burst: live goes first, the backfill gets
 * only what live leaves); `other` (another client spends
 * 20 % of the store's budget out of band); `quiet` (live orders trickle in on 10 other stores
 * meanwhile: their latency against an idle run).
 */

import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Arrival } from "@connector/provider-sandbox/app.ts";
import type { StoredOrder } from "@connector/provider-sandbox/orders.ts";
import Database from "better-sqlite3";
import { type FeedItem, feedAtBudget } from "../src/engine/budget-feeder.ts";
import { freePort, startRedisServer } from "../src/lib/redis-server.ts";
import type { ShopDomain, ShopifyOrderId } from "../src/sync/source-order.ts";
import { sourceOrder } from "../test/helpers/source-order-factory.ts";
import { needChild, release } from "./children.ts";
import { benchContext } from "./context.ts";
import { PRODUCTION_ENV, PRODUCTION_NODE_FLAGS } from "./production.ts";

const { values: args } = parseArgs({
  strict: false,
  options: {
    burst: { type: "string" },
    "window-ms": { type: "string" },
    limit: { type: "string", default: "100" },
    variant: { type: "string" },
    workers: { type: "string" },
    baseline: { type: "string", default: "yes" },
  },
});

const LIMIT = Number(args.limit);
const HOT = 1001;
const QUIET = Array.from({ length: 10 }, (_, i) => HOT + 1 + i);
const shopOf = (store: number) => `flash-${store}.myshopify.com`;

type Variant = "plain" | "backfill" | "other" | "quiet";
type Mode = "connector" | "baseline";

export interface FlashResult {
  mode: Mode;
  burst: number;
  windowMs: number;
  variant: Variant;
  workers: number;
  /**
   * Provider calls on the hot store (ours, and the other client's in `other`) in the whole
   * windows from the first burst call, over L per window (see the header).
   */
  utilization: number;
  /** The same calls against the provider's rate over the span, L·(1 + s/W): stricter. */
  rateUsed: number;
  /**
   * How full the provider's window was from the first call to the last: the mean over that span
   * of what it counted in the window before each moment (ours and the other client's, up to L),
   * over L. Unlike the two above it charges no budget the burst did not need: a burst that
   * ends part way into a window (as it does when another client takes a share of each) is not
   * charged that window's unused rest.
   */
  windowFill: number;
  rateLimited: number;
  movesPerCall: number;
  /** Burst order latency: from the burst to the order's arrival at the provider. */
  p50: number;
  p95: number;
  max: number;
  idealMs: number;
  /** The most later-arriving burst orders that reached the provider before one order. */
  worstOvertaking: number;
  /** Quiet stores' live latency p95 (variant quiet) and the idle p95, ms. */
  quietP95: number | null;
}

/** The provider sandbox in its own process, read and driven through `/_sandbox/*`. */
async function startProvider(stores: number[], windowMs: number) {
  const clientId = "flash-client";
  const clientSecret = randomUUID();
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "src/cli/index.ts",
      "sandbox",
      "--control",
      "--port",
      "0",
      "--client-id",
      clientId,
      "--client-secret",
      clientSecret,
      "--stores",
      stores.join(","),
      "--rate-limit",
      String(LIMIT),
      "--window-ms",
      String(windowMs),
      "--registrations",
      "0",
    ],
    { env: { ...process.env, LOG_LEVEL: "warn" }, stdio: ["ignore", "pipe", "inherit"] },
  );
  needChild(child, "provider sandbox (connector sandbox --control)");
  let output = "";
  child.stdout?.setEncoding("utf8");
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (chunk: string) => {
      output += chunk;
      const match = /PROVIDER_AUTH_URL=(\S+)/.exec(output);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`sandbox exited (${code}): ${output}`)));
  });
  const control = async (path: string, init?: RequestInit) => {
    const response = await fetch(`${url}/_sandbox/${path}`, init);
    if (!response.ok) throw new Error(`sandbox ${path}: ${response.status}`);
    return response.json();
  };
  return {
    url,
    baseUrl: `${url}/v1`,
    audience: "https://api.sandbox.local/v1",
    clientId,
    clientSecret,
    state: () => control("state") as Promise<{ orders: StoredOrder[]; arrivals: Arrival[] }>,
    consume: (storeId: number, count: number) =>
      control("consume", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ storeId, count }),
      }),
    async close() {
      release(child);
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}

/** Windows the burst needs: L each, or L less the other client's 20 % while it spends. */
const windowsFor = (burst: number, variant: Variant) =>
  Math.ceil(burst / (variant === "other" ? LIMIT - LIMIT / 5 : LIMIT));

/**
 * Requests counted in the whole windows [from + kW, from + (k+1)W) that end by `to`, over L per
 * window; the window `to` falls in holds only what was left and is not counted. A span shorter
 * than a window: its requests over L.
 */
function budgetUsed(arrivals: number[], from: number, to: number, windowMs: number): number {
  const windows = Math.floor((to - from) / windowMs);
  if (windows === 0)
    return Math.min(1, arrivals.filter((at) => at >= from && at <= to).length / LIMIT);
  const end = from + windows * windowMs;
  return arrivals.filter((at) => at >= from && at < end).length / (LIMIT * windows);
}

/** The mean of min(L, requests counted in (t − W, t]) over t in [from, to], over L. */
function windowFill(arrivals: number[], from: number, to: number, windowMs: number): number {
  if (to <= from) return 1;
  // +1 when a request arrives, −1 when it leaves the window; swept from `from` to `to`.
  const events = arrivals
    .filter((at) => at <= to && at + windowMs > from)
    .flatMap((at): [number, number][] => [
      [at, 1],
      [at + windowMs, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let count = 0;
  let area = 0;
  let at = from;
  for (const [time, step] of events) {
    if (time > at) {
      const until = Math.min(time, to);
      if (until > at) area += Math.min(LIMIT, count) * (until - at);
      at = Math.max(at, until);
    }
    count += step;
  }
  if (to > at) area += Math.min(LIMIT, count) * (to - at);
  return area / (LIMIT * (to - from));
}

const pct = (values: number[], p: number) =>
  values[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? Number.NaN;

/** A worker process: the connector's (`dist/main.mjs --role worker`) or the baseline's. */
async function startWorkers(mode: Mode, count: number, env: Record<string, string>) {
  const script =
    mode === "connector"
      ? ["dist/main.mjs", "--role", "worker"]
      : ["dist/bench-flash-baseline.mjs"];
  return Promise.all(
    Array.from({ length: count }, async () => {
      const port = await freePort();
      const child = spawn(
        process.execPath,
        // As the Dockerfile and `npm run start:prod` run the process.
        [...PRODUCTION_NODE_FLAGS, ...script],
        {
          env: { ...process.env, ...PRODUCTION_ENV, ...env, METRICS_PORT: String(port) },
          stdio: ["ignore", "ignore", "inherit"],
        },
      );
      needChild(child, `${mode === "connector" ? "connector" : "baseline"} worker (${script[0]})`);
      // Ready when its metrics answer.
      for (let i = 0; ; i++) {
        if (
          await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        if (i > 300 || child.exitCode !== null) throw new Error(`${script[0]} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return {
        /** Sums of the process's counters, read from its /metrics. */
        async counters() {
          const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          const sum = (name: string) =>
            [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))].reduce(
              (total, m) => total + Number(m[1]),
              0,
            );
          const byReason = Object.fromEntries(
            [...text.matchAll(/^connector_limiter_waits_total\{reason="(\w+)"\} (\S+)$/gm)].map(
              (m) => [m[1], Number(m[2])],
            ),
          );
          return {
            byReason,
            calls: sum("connector_provider_requests_total"),
            waits: sum("connector_limiter_waits_total"),
            rateLimited: sum("connector_provider_rate_limited_total"),
          };
        },
        async stop() {
          release(child);
          child.kill("SIGKILL");
          if (child.exitCode === null) await once(child, "exit");
        },
      };
    }),
  );
}

async function runFlash(
  redisUrl: string,
  mode: Mode,
  burst: number,
  windowMs: number,
  variant: Variant,
  workerCount: number,
  quietOnly = false,
): Promise<FlashResult> {
  const stores = [HOT, ...QUIET];
  const sandbox = await startProvider(stores, windowMs);
  const dir = mkdtempSync(join(tmpdir(), "bench-flash-"));
  const prefix = `flash-${randomUUID().slice(0, 8)}`;
  const settings = {
    DATABASE_PATH: join(dir, "c.sqlite"),
    PROVIDER_RATE_LIMIT: String(LIMIT),
    PROVIDER_RATE_WINDOW_MS: String(windowMs),
    SYNC_RETRY_DELAY_MS: "200",
    LOG_LEVEL: "silent",
  };
  const ctx = await benchContext({
    env: settings,
    redisUrl,
    prefix,
    provider: { ...sandbox, authUrl: sandbox.url },
    shops: stores.map((store) => ({ shop: shopOf(store), storeId: store })),
  });
  const workers = await startWorkers(mode, workerCount, {
    ...settings,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    PROVIDER_BASE_URL: sandbox.baseUrl,
    PROVIDER_AUTH_URL: sandbox.url,
    PROVIDER_AUDIENCE: sandbox.audience,
    WORKER_CONCURRENCY: "16",
  });
  const queue = async (store: number, id: number) => {
    const order = sourceOrder({
      shop: shopOf(store) as ShopDomain,
      id: String(id) as ShopifyOrderId,
    });
    await ctx.snapshots.storeOrder(order);
    return { shop: order.shop, orderId: order.id, receivedAt: Date.now() };
  };
  // The burst's orders synced so far: their links, in the database every worker writes.
  const links = new Database(settings.DATABASE_PATH, { readonly: true });
  const syncedOfBurst = links.prepare(
    "select count(*) as n from order_links where shop = ? and cast(source_order_id as integer) < 5000000",
  );

  // The connector has been running when the sale opens: its worker processes have compiled their
  // code, opened connections to the provider and cached its token. Four orders on each quiet
  // store, synced before anything is measured (the hot store's window stays untouched, so its
  // limiter still meets the burst knowing nothing of it).
  const warm = [];
  for (const [s, store] of QUIET.entries())
    for (let i = 0; i < 4; i++) warm.push(await queue(store, 8_000_000 + s * 10 + i));
  for (const item of warm)
    await ctx.queues.enqueueSync({ ...item, trigger: "orders/create", priority: "live" });
  const warmed = links.prepare(
    "select count(*) as n from order_links where cast(source_order_id as integer) between 8000000 and 8999999",
  );
  for (let waited = 0; (warmed.get() as { n: number }).n < warm.length; waited += 50) {
    if (waited > 60_000) throw new Error("the warm-up orders did not sync in a minute");
    await new Promise((r) => setTimeout(r, 50));
  }

  // Snapshots first, so the burst itself is only the queueing.
  const burstItems = [];
  for (let i = 0; i < (quietOnly ? 0 : burst); i++)
    burstItems.push(await queue(HOT, 1_000_000 + i));
  const backlogItems: FeedItem[] = [];
  if (variant === "backfill") {
    // Enough backlog to outlast the burst.
    for (let i = 0; i < burst + 4 * LIMIT; i++) {
      const item = await queue(HOT, 5_000_000 + i);
      backlogItems.push({ ...item, trigger: "backfill" });
    }
  }

  // With a backfill, the flash sale meets a store the backfill already saturates: the feeder
  // runs a window first.
  const feeding =
    variant === "backfill"
      ? mode === "connector"
        ? feedAtBudget({ limiter: ctx.limiter, queues: ctx.queues }, HOT, backlogItems)
        : Promise.all(
            backlogItems.map((item) => ctx.queues.enqueueSync({ ...item, priority: "bulk" })),
          )
      : Promise.resolve();
  if (variant === "backfill") await new Promise((r) => setTimeout(r, windowMs * 1.5));
  // The other client spends its 20 % steadily: it has been at it for a window when the burst
  // comes, as it would be on a real store.
  const oobAt: number[] = [];
  const oob =
    variant === "other"
      ? setInterval(
          () => {
            sandbox.consume(HOT, 1).catch(() => {});
            oobAt.push(Date.now());
          },
          (windowMs / LIMIT) * 5,
        )
      : null;
  if (variant === "other") await new Promise((r) => setTimeout(r, windowMs));
  let started = Date.now();
  for (const item of burstItems)
    await ctx.queues.enqueueSync({ ...item, trigger: "orders/create", priority: "live" });
  started = burstItems.length > 0 ? started : Date.now();
  const quietSent = new Map<string, number>();
  let quietSeq = 0;
  const quiet =
    variant === "quiet"
      ? setInterval(async () => {
          const store = QUIET[quietSeq % QUIET.length] as number;
          const id = 9_000_000 + quietSeq++;
          const item = await queue(store, id);
          quietSent.set(String(id), Date.now());
          await ctx.queues.enqueueSync({ ...item, trigger: "orders/create", priority: "live" });
        }, 100)
      : null;

  // BENCH_DIAG: what the limiter believed, every 50 ms (the ledger's counts and the line).
  const samples: {
    at: number;
    ours: number;
    others: number;
    waiting: number;
    pending: number;
    /** The other client's count as last read exactly, and how old that read is (ms). */
    read: string;
  }[] = [];
  let linePrinted = false;
  const sampler = process.env.BENCH_DIAG
    ? setInterval(async () => {
        // The line's promises once, 3 s in: how many waiters are promised each half second.
        if (!linePrinted && Date.now() - started > 3000) {
          linePrinted = true;
          const line = await ctx.redis.zrange(
            `${prefix}:limiter:{${HOT}}:waiters:live`,
            "0",
            "-1",
            "WITHSCORES",
          );
          const scores = line.filter((_, i) => i % 2 === 1).map(Number);
          const gaps = scores
            .slice(1)
            .map((v, i) => v - (scores[i] as number))
            .sort((a, b) => a - b);
          const q = [1, 10, 50, 90, 99, 100].map((p) => pct(gaps, p).toFixed(2)).join("/");
          console.log(
            `diag: the line's promise gaps (ms) p1/p10/p50/p90/p99/max ${q}; first ${((scores[0] ?? 0) - started).toFixed(0)} last ${((scores.at(-1) ?? 0) - started).toFixed(0)} of ${scores.length}`,
          );
          const per = new Map<number, number>();
          for (let i = 1; i < line.length; i += 2) {
            const k = Math.floor((Number(line[i]) - started) / 500) / 2;
            per.set(k, (per.get(k) ?? 0) + 1);
          }
          console.log(
            `diag: the line at +3 s, promises per 0.5 s: ${[...per]
              .sort((a, b) => a[0] - b[0])
              .map(([k, n]) => `${k}s:${n}`)
              .join(" ")}`,
          );
        }
        const base = `${prefix}:limiter:{${HOT}}`;
        const now = Date.now();
        const from = `(${now - windowMs - 10}`;
        const replies = (await ctx.redis
          .multi()
          .zcount(`${base}:slots`, from, "+inf")
          .zcount(`${base}:slots:live`, from, "+inf")
          .zcount(`${base}:others`, from, "+inf")
          .zcard(`${base}:waiters:live`)
          .zcard(`${base}:pending`)
          .hmget(`${base}:lag`, "others", "othersAt")
          .exec()
          .then((r) => (r ?? []).map(([, v]) => v))) as unknown[];
        const [bulk, live, others, waiting, pending] = replies.slice(0, 5).map(Number);
        const [read, readAt] = (replies[5] ?? []) as (string | null)[];
        samples.push({
          at: now,
          ours: (bulk ?? 0) + (live ?? 0),
          others: others ?? 0,
          waiting: waiting ?? 0,
          pending: pending ?? 0,
          read: read ? `${read}@${now - Number(readAt)}` : "-",
        });
      }, 50)
    : null;
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    if (quietOnly && quietSeq >= 60) break;
    const { n } = syncedOfBurst.get(shopOf(HOT)) as { n: number };
    if (!quietOnly && n >= burst) break;
    if (Date.now() - started > 30 * 60_000) throw new Error("flash sale did not drain in 30 min");
  }
  if (quiet) clearInterval(quiet);
  if (oob) clearInterval(oob);
  if (sampler) clearInterval(sampler);
  // Let the quiet orders already queued finish.
  if (variant === "quiet") {
    for (let i = 0; i < 100; i++) {
      const c = await ctx.queues.sync.getJobCounts("waiting", "active", "delayed", "prioritized");
      if (Object.values(c).every((n) => n === 0)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const counters = await Promise.all(workers.map((w) => w.counters()));
  const calls = counters.reduce((sum, c) => sum + c.calls, 0);
  const moves = counters.reduce((sum, c) => sum + c.waits + c.rateLimited, 0);

  if (process.env.BENCH_DIAG) {
    // What the limiter learned: other clients' requests (none exist in `plain`) and its lags.
    const base = `${prefix}:limiter:{${HOT}}`;
    const others = await ctx.redis.zrangebyscore(`${base}:others`, "-inf", "+inf", "WITHSCORES");
    const lag = await ctx.redis.hgetall(`${base}:lag`);
    const reasons: Record<string, number> = {};
    for (const c of counters)
      for (const [r, n] of Object.entries(c.byReason)) reasons[r] = (reasons[r] ?? 0) + Number(n);
    console.log(`diag: queue moves by reason ${JSON.stringify(reasons)}`);
    console.log(
      `diag: others learned ${others.length / 2} (at +${others
        .filter((_, i) => i % 2 === 1)
        .map((t) => Number(t) - started)
        .slice(0, 10)
        .join(", ")} ms); lag ${JSON.stringify(lag)}`,
    );
  }
  const providerState = await sandbox.state();
  const created = new Map(
    providerState.orders.map((o) => [o.sourceOrderId, Date.parse(o.createdOn)]),
  );
  const burstLatency = burstItems
    .map((i) => (created.get(i.orderId) ?? Number.NaN) - started)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  // Arrival order: the burst's index; overtaking: later-index orders created before this one.
  const arrivedAt = burstItems.map((i) => created.get(i.orderId) ?? Number.POSITIVE_INFINITY);
  let worst = 0;
  for (let i = 0; i < arrivedAt.length; i++) {
    let overtakers = 0;
    for (let j = i + 1; j < arrivedAt.length; j++)
      if ((arrivedAt[j] as number) < (arrivedAt[i] as number)) overtakers++;
    worst = Math.max(worst, overtakers);
  }
  const hot = providerState.arrivals.filter((a) => a.storeId === HOT && a.status !== 429);
  if (process.env.BENCH_DIAG) {
    // The hot store's requests per half second: ours admitted, the other client's, 429s.
    const buckets = new Map<number, [number, number, number]>();
    const bucket = (at: number) => {
      const k = Math.floor((at - started) / 500);
      const b = buckets.get(k) ?? [0, 0, 0];
      buckets.set(k, b);
      return b;
    };
    for (const a of providerState.arrivals.filter((x) => x.storeId === HOT)) {
      if (a.status === 429) bucket(a.at)[2]++;
      else bucket(a.at)[0]++;
    }
    for (const at of oobAt) bucket(at)[1]++;
    console.log(
      `diag: per 0.5 s [ours, other client, 429]: ${[...buckets]
        .sort((x, y) => x[0] - y[0])
        .map(([k, b]) => `${k / 2}s:${b.join("/")}`)
        .join(" ")}`,
    );
    // The server's window against the limiter's ledger, every 50 ms for the first windows and
    // at each 429: [server ours+other | ledger ours+others, live waiters, pending].
    const admitted = providerState.arrivals
      .filter((x) => x.storeId === HOT && x.status !== 429)
      .map((x) => x.at);
    const inWindow = (times: number[], t: number) =>
      times.filter((x) => x > t - windowMs && x <= t).length;
    const view = (s: (typeof samples)[number]) =>
      `+${s.at - started}:${inWindow(admitted, s.at)}+${inWindow(oobAt, s.at)}|${s.ours}+${s.others},w${s.waiting},p${s.pending},r${s.read}`;
    console.log(
      `diag: server|ledger: ${samples
        .filter((s) => s.at - started < 4 * windowMs)
        .filter((_, i) => i % 2 === 0)
        .map(view)
        .join(" ")}`,
    );
    for (const a of providerState.arrivals.filter((x) => x.storeId === HOT && x.status === 429)) {
      const near = samples.filter((s) => s.at <= a.at).at(-1);
      console.log(
        `diag: 429 at +${a.at - started}: server held ${inWindow(admitted, a.at)} ours + ${inWindow(oobAt, a.at)} other; ledger just before ${near ? view(near) : "-"}; the second before: ${samples
          .filter((s) => s.at > a.at - 1000 && s.at < a.at)
          .map(view)
          .join(" ")}`,
      );
    }
    // How long each slot took to come round again: the i-th admitted request against the one
    // L before it (the window, and what the limiter lost on top of it), and each round's spread.
    const sorted = [...admitted].sort((x, y) => x - y);
    const excess = sorted
      .slice(LIMIT)
      .map((t, i) => t - (sorted[i] as number) - windowMs)
      .sort((x, y) => x - y);
    const rounds: string[] = [];
    for (let k = 0; k * LIMIT < sorted.length; k++) {
      const r = sorted.slice(k * LIMIT, (k + 1) * LIMIT);
      rounds.push(`${(r[0] as number) - started}+${(r.at(-1) as number) - (r[0] as number)}`);
    }
    console.log(
      `diag: slot comes round W + p10/p50/p90/max ${[10, 50, 90, 100].map((p) => pct(excess, p)).join("/")} ms; rounds (start+spread ms): ${rounds.join(" ")}`,
    );
    const lateOnes = burstItems
      .map((i, index) => ({ index, at: (created.get(i.orderId) ?? Number.NaN) - started }))
      .sort((x, y) => y.at - x.at)
      .slice(0, 5);
    console.log(
      `diag: last orders (burst index @ ms): ${lateOnes.map((o) => `${o.index}@${o.at}`).join(" ")}`,
    );
    const byStatus = new Map<string, number>();
    for (const a of providerState.arrivals.filter((x) => x.storeId === HOT))
      byStatus.set(`${a.method} ${a.status}`, (byStatus.get(`${a.method} ${a.status}`) ?? 0) + 1);
    const late = burstLatency.filter((t) => t > windowMs * Math.ceil(burst / LIMIT) * 1.05);
    console.log(
      `diag: hot-store requests ${JSON.stringify([...byStatus])}; ${late.length} orders after the ideal; arrivals after ${(windowMs * Math.ceil(burst / LIMIT)) / 1000} s: ${hot
        .filter((a) => a.at - started > windowMs * Math.ceil(burst / LIMIT))
        .map((a) => `${a.method} ${a.path} +${a.at - started}`)
        .slice(0, 5)
        .join("; ")}`,
    );
  }
  const lastOfBurst = Math.max(...arrivedAt);
  const burstCalls = hot.filter((a) => a.at >= started && a.at <= lastOfBurst);
  const first = Math.min(...burstCalls.map((a) => a.at));
  const last = Math.max(...burstCalls.map((a) => a.at));
  // The other client's requests the provider counted in the span: with its requests already in
  // the window at the first call (it spends before the burst), those too, as they hold part of
  // the first window's budget.
  const others = oobAt.filter((t) => t > first - windowMs && t <= last).length;
  const span = last - first;
  const admittedHot = providerState.arrivals
    .filter((a) => a.storeId === HOT && a.status !== 429)
    .map((a) => a.at);
  const quietLatency = [...quietSent.entries()]
    .map(([id, at]) => (created.get(id) ?? Number.NaN) - at)
    .filter(Number.isFinite)
    .sort((a, b) => a - b);
  if (process.env.BENCH_DIAG && quietLatency.length > 0) {
    const worst = [...quietSent.entries()]
      .map(([id, at]) => ({ at: at - started, took: (created.get(id) ?? Number.NaN) - at }))
      .sort((a, b) => b.took - a.took)
      .slice(0, 12);
    console.log(
      `diag: quiet orders, the slowest (sent at +ms: took ms): ${worst.map((w) => `${w.at}:${w.took}`).join(" ")}`,
    );
  }
  const result: FlashResult = {
    mode,
    burst,
    windowMs,
    variant,
    workers: workerCount,
    // With a backfill, the window is already full when the burst starts: a span of s then
    // holds what frees in it, L·s/W, on both counts.
    utilization: budgetUsed([...burstCalls.map((a) => a.at), ...oobAt], first, last, windowMs),
    rateUsed:
      (burstCalls.length + others) / (LIMIT * ((variant === "backfill" ? 0 : 1) + span / windowMs)),
    windowFill: windowFill([...admittedHot, ...oobAt], first, last, windowMs),
    rateLimited: providerState.arrivals.filter((a) => a.storeId === HOT && a.status === 429).length,
    movesPerCall: calls > 0 ? moves / calls : 0,
    p50: pct(burstLatency, 50),
    p95: pct(burstLatency, 95),
    max: burstLatency.at(-1) ?? Number.NaN,
    idealMs: (windowsFor(burst, variant) - 1) * windowMs,
    worstOvertaking: worst,
    quietP95: quietLatency.length > 0 ? pct(quietLatency, 95) : null,
  };
  await Promise.all(workers.map((w) => w.stop()));
  await feeding;
  links.close();
  await ctx.queues.sync.obliterate({ force: true });
  await ctx.close();
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
  return result;
}

const list = (value: unknown, fallback: number[]) =>
  typeof value === "string" ? value.split(",").map(Number) : fallback;

export async function flashSaleBench() {
  // Both sides run as production bundles, as bench:worker does.
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { stdio: "inherit" });
  const { bundle } = await import("../scripts/bundle.ts");
  await bundle(["bench/flash-baseline-worker.ts"], { outfile: "dist/bench-flash-baseline.mjs" });
  const bursts = list(
    args.burst,
    [2, 10, 50].map((x) => x * LIMIT),
  );
  const windows = list(args["window-ms"], [2000, 10000]);
  const variants = (
    typeof args.variant === "string" ? args.variant.split(",") : ["plain"]
  ) as Variant[];
  const workerCounts = list(args.workers, [2]);
  const redis = await startRedisServer();
  needChild(redis.process, "redis-server");
  console.log(
    `bench:throttle --scenario flash-sale — limit ${LIMIT} per window, one store, the burst queued at once, the provider in its own process; budget used = provider calls (ours and another client's) in the whole windows from the first call / L per window, rate used = the same / L·(1 + span/W), window fill = the mean of what the provider counted in its window (up to L) over the span / L\n`,
  );
  console.log(
    "| limiter | burst | window | variant | worker processes | budget used | rate used | window fill | 429s | moves/call | last order at (s) | ideal / bound (s) | p50 / p95 (s) | worst overtaking | quiet p95 (idle) |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const windowMs of windows) {
    for (const burst of bursts) {
      for (const variant of variants) {
        for (const workers of workerCounts) {
          let idleP95: number | null = null;
          if (variant === "quiet") {
            idleP95 = (
              await runFlash(redis.url, "connector", burst, windowMs, variant, workers, true)
            ).quietP95;
          }
          // --baseline no: the connector's rows only; only: BullMQ's rows only; yes: both.
          const modes: Mode[] =
            args.baseline === "no"
              ? ["connector"]
              : args.baseline === "only"
                ? ["baseline"]
                : ["connector", "baseline"];
          for (const mode of modes) {
            const r = await runFlash(redis.url, mode, burst, windowMs, variant, workers);
            console.log(
              `| ${mode === "connector" ? "per-store limiter" : "BullMQ queue limiter"} | ${burst} | ${windowMs / 1000} s | ${variant} | ${workers} | ${(r.utilization * 100).toFixed(1)} % | ${(r.rateUsed * 100).toFixed(1)} % | ${(r.windowFill * 100).toFixed(1)} % | ${r.rateLimited} | ${r.movesPerCall.toFixed(2)} | ${(r.max / 1000).toFixed(2)} | ${(r.idealMs / 1000).toFixed(1)} / ${((windowsFor(burst, variant) * (windowMs + windowMs / LIMIT)) / 1000).toFixed(2)} | ${(r.p50 / 1000).toFixed(1)} / ${(r.p95 / 1000).toFixed(1)} | ${r.worstOvertaking} | ${r.quietP95 === null ? "-" : `${r.quietP95.toFixed(0)} ms (${idleP95?.toFixed(0) ?? "-"} ms)`} |`,
            );
          }
        }
      }
    }
  }
  release(redis.process);
  await redis.stop();
}
