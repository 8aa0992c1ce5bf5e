import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { sealedFor } from "../../src/lib/secret-box.ts";
import type { ProviderStoreId } from "../../src/provider/schemas.ts";
import type { ShopDomain } from "../../src/sync/source-order.ts";
import { connectorEntry } from "../helpers/cli.ts";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";
import { service } from "../helpers/services.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

const HOT = "hot-shop.myshopify.com";
const QUIET = "quiet-shop.myshopify.com";
const LIMIT = 20;
const WINDOW = 1_000;

let pipeline: Pipeline;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  await pipeline?.close();
});

/** Starts `npm start --role worker` as a separate OS process against the test's Redis and DB. */
function spawnWorker(p: Pipeline): ChildProcess {
  const child = spawn(process.execPath, connectorEntry("--role", "worker"), {
    env: {
      ...process.env,
      REDIS_URL: service("redisUrl"),
      REDIS_PREFIX: p.ctx.prefix,
      DATABASE_PATH: p.ctx.config.env.DATABASE_PATH,
      PROVIDER_BASE_URL: p.sandbox.url,
      PROVIDER_AUTH_URL: p.sandbox.authUrl,
      PROVIDER_AUDIENCE: p.sandbox.audience,
      PROVIDER_RATE_LIMIT: String(LIMIT),
      PROVIDER_RATE_WINDOW_MS: String(WINDOW),
      // Five busy Node processes share two cores here: allow 250 ms from grant to arrival.
      PROVIDER_RATE_MARGIN_MS: "250",
      WORKER_CONCURRENCY: "8",
      SYNC_RETRY_DELAY_MS: "100",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  children.push(child);
  return child;
}

async function setup(sandboxStores = [1001, 1002]) {
  pipeline = await startPipeline({
    workers: 0,
    registerShop: false,
    sandbox: { stores: sandboxStores, rateLimit: LIMIT, windowMs: WINDOW },
    env: {
      PROVIDER_RATE_LIMIT: String(LIMIT),
      PROVIDER_RATE_WINDOW_MS: String(WINDOW),
      PROVIDER_RATE_MARGIN_MS: "250",
    },
  });
  for (const [shop, storeId] of [
    [HOT, 1001],
    [QUIET, 1002],
  ] as const) {
    await pipeline.ctx.shops.upsertShop(shop, {
      storeId,
      providerClientId: pipeline.sandbox.clientId,
      providerClientSecretSealed: pipeline.ctx.secrets.seal(
        pipeline.sandbox.clientSecret,
        sealedFor.providerClientSecret(shop),
      ),
      storeCurrency: "USD",
    });
  }
}

async function enqueue(shop: string, count: number, from = 0) {
  for (let i = from; i < from + count; i++) {
    const order = sourceOrder({
      shop: shop as ShopDomain,
      id: String(100_000 + i) as never,
      name: `#${i}`,
    });
    await pipeline.ctx.snapshots.storeOrder(order);
    await pipeline.ctx.queues.enqueueSync({
      shop,
      orderId: order.id,
      priority: "live",
      trigger: "orders/create",
      receivedAt: Date.now(),
    });
  }
}

describe("per-store throttling across worker processes", () => {
  it("keeps every store inside its window with no 429, and a busy store never delays a quiet one", async () => {
    await setup();
    await enqueue(HOT, 80);
    spawnWorker(pipeline);
    spawnWorker(pipeline);
    spawnWorker(pipeline);
    // The quiet store's orders come once the busy store is being served.
    await expect
      .poll(() => pipeline.sandbox.state.admittedFor(1001 as ProviderStoreId).length, {
        // Three worker processes start: slow on a loaded machine.
        timeout: 40_000,
      })
      .toBeGreaterThanOrEqual(10);
    await enqueue(QUIET, 5, 1_000);
    await pipeline.drain(30_000);

    const state = pipeline.sandbox.state;
    expect(state.counters.rateLimited).toBe(0);
    expect(state.admittedFor(1001 as ProviderStoreId)).toHaveLength(80);
    expect(state.admittedFor(1002 as ProviderStoreId)).toHaveLength(5);
    expect(state.orders.all).toHaveLength(85);
    expect(state.maxInAnyWindow(1001, WINDOW)).toBeLessThanOrEqual(LIMIT);
    // The quiet store's orders went through while the hot store was still draining its backlog.
    const lastQuiet = Math.max(...state.admittedFor(1002).map((a) => a.at));
    const lastHot = Math.max(...state.admittedFor(1001).map((a) => a.at));
    expect(lastQuiet).toBeLessThan(lastHot - WINDOW);
  }, 90_000);

  it("obeys Retry-After when another client spends the budget, for every process", async () => {
    await setup();
    spawnWorker(pipeline);
    spawnWorker(pipeline);
    await enqueue(QUIET, 2, 1_000);
    await pipeline.drain(30_000);
    pipeline.sandbox.consume(1001, LIMIT);
    await enqueue(HOT, 10);
    await pipeline.drain(30_000);
    const arrivals = pipeline.sandbox.state.arrivals
      .filter((a) => a.storeId === 1001)
      .sort((a, b) => a.at - b.at);
    const first429 = arrivals.find((a) => a.status === 429);
    expect(first429).toBeDefined();
    // The jobs that started together all went out before the first answer came back (the
    // limiter could not know the budget was gone) and got 429s; after that, every process held
    // the store until Retry-After (1 s) had passed: no request was admitted in that second.
    const firstAdmittedAfter = arrivals.find(
      (a) => first429 && a.at > first429.at && a.status !== 429,
    );
    expect(firstAdmittedAfter?.at).toBeGreaterThanOrEqual((first429?.at ?? 0) + 950);
    const burst = arrivals.filter((a) => first429 && a.status === 429 && a.at < first429.at + 950);
    expect(burst.length).toBe(pipeline.sandbox.state.counters.rateLimited);
    expect(pipeline.sandbox.state.orders.all).toHaveLength(12);
  }, 60_000);
});
