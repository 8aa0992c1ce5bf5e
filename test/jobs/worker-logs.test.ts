import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type SyncWorkers, startSyncWorker } from "../../src/jobs/sync-worker.ts";
import { FailureDigest } from "../../src/lib/failure-digest.ts";
import { createLogger, type Logger } from "../../src/lib/logger.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import type { ShopRepository } from "../../src/store/index.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

let pipeline: Pipeline | undefined;
let worker: SyncWorkers | undefined;
afterEach(async () => {
  await worker?.close();
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
  worker = undefined;
});

/** A worker whose pino lines are captured, parsed. */
async function capturedWorker(
  options: {
    env?: Record<string, string>;
    failures?: (logger: Logger) => FailureDigest;
    /** Wraps the worker's shop repository, e.g. to make its database unreachable. */
    shops?: (shops: ShopRepository) => ShopRepository;
  } = {},
) {
  const p = await startPipeline({
    workers: 0,
    sandbox: { fulfillmentLocations: { 1001: [77] } },
    ...(options.env ? { env: options.env } : {}),
  });
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  p.ctx.logger = createLogger("debug", sink);
  const failures = options.failures?.(p.ctx.logger.child({ component: "sync-worker" }));
  // The worker's shop repository wrapped (it is read as the worker starts), the receiver's not.
  const shops = p.ctx.shops;
  if (options.shops) p.ctx.shops = options.shops(shops);
  worker = startSyncWorker(p.ctx, { concurrency: 2, ...(failures ? { failures } : {}) });
  p.ctx.shops = shops;
  return { p, lines, raw };
}

/** The lines an operator sees at LOG_LEVEL=info (debug ones left out), of the sync worker. */
const atInfo = (lines: Record<string, unknown>[]) =>
  lines.filter((l) => l.component === "sync-worker" && l.level !== "debug");

/**
 * Waits for `count` dead letters and their log lines: the worker writes an order's line after
 * its entry, so the last entry can be counted before its line is out.
 */
async function deadLetters(p: Pipeline, count: number, lines: Record<string, unknown>[]) {
  await vi.waitFor(
    async () => {
      expect(await p.ctx.queues.deadLetter.getWaitingCount()).toBe(count);
      expect(lines.filter((l) => l.msg === "sync dead-lettered")).toHaveLength(count);
    },
    { timeout: 30_000, interval: 50 },
  );
}

describe("worker logs", { timeout: 60_000 }, () => {
  it("carry shop, order and job IDs on every job line, mapping warnings at info, and no customer data", async () => {
    const { p, lines, raw } = await capturedWorker();
    pipeline = p;
    // Synced, with a warning: its line has no SKU.
    const warned = shippedOrder(5_590_001, { fulfillments: [] });
    warned.lines = warned.lines.map((l) => ({ ...l, sku: null }));
    await p.send("orders/create", orderPayload(warned));
    // Dead-lettered: the provider does not know the mapped location.
    await p.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 78 } });
    await p.send("orders/create", orderPayload(shippedOrder(5_590_011)));
    await p.drain();

    const jobLines = lines.filter((l) => l.component === "sync-worker");
    expect(jobLines.length).toBeGreaterThanOrEqual(4);
    for (const line of jobLines) {
      expect(line).toMatchObject({ shop: TEST_SHOP, jobId: expect.any(String) });
      expect(["5590001", "5590011"]).toContain(line.orderId);
      expect(line.trigger).toBe("orders/create");
    }
    const warning = jobLines.find((l) => l.msg === "order mapped with warnings");
    expect(warning).toMatchObject({ level: "info", orderId: "5590001" });
    expect((warning?.warnings as string[] | undefined)?.[0]).toContain("has no SKU");
    const dead = jobLines.find((l) => l.msg === "sync dead-lettered");
    expect(dead).toMatchObject({
      level: "error",
      orderId: "5590011",
      category: "provider-validation",
      errorClass: "ProviderValidationError",
      status: 400,
      fields: ["fulfillmentLocationId"],
    });
    // The provider's own words may echo what we sent: they stay in the dead letter only.
    expect(dead).not.toHaveProperty("reason");

    // The dead letter keeps the customer's data; the logs never show it.
    const entry = await p.ctx.queues.deadLetter.getJob(`${TEST_SHOP}|5590011`);
    expect(JSON.stringify(entry?.data.request)).toContain("1Z1");
    const everything = raw.join("\n");
    for (const secret of ["grace@example.com", "555-0100", "5550100", "Grace", "Hopper"]) {
      expect(everything).not.toContain(secret);
    }
  });
});

describe("worker logs of a cause that repeats", { timeout: 90_000 }, () => {
  it("say a provider answering 500 once with the fix, sum it up each minute and say when it ends", async () => {
    let now = 1_000_000;
    let digest: FailureDigest | undefined;
    const { p, lines } = await capturedWorker({
      env: { SYNC_ATTEMPTS: "3" },
      failures: (logger) => {
        digest = new FailureDigest(logger, { now: () => now });
        return digest;
      },
    });
    pipeline = p;
    p.sandbox.setFaults({ errorRate: 1 });
    const orders = 10;
    for (let i = 0; i < orders; i++) {
      await p.send(
        "orders/create",
        orderPayload(shippedOrder(5_591_000 + i, { fulfillments: [] })),
      );
    }
    await deadLetters(p, orders, lines);

    // Every attempt and every order still has its line, at debug.
    const perAttempt = lines.filter((l) => l.msg === "sync failed; will retry");
    const perOrder = lines.filter((l) => l.msg === "sync dead-lettered");
    expect(perAttempt.length + 1).toBe(orders * 2);
    expect(perOrder).toHaveLength(orders);
    expect(
      perAttempt.every((l) => l.level === "debug" && l.errorClass === "ProviderServerError"),
    ).toBe(true);

    // At info: one warning for the cause, with the fix, and one dead letter line; not 30 lines.
    const seen = atInfo(lines);
    expect(seen.map((l) => [l.level, l.msg])).toEqual([
      ["warn", expect.stringContaining(`sync of ${TEST_SHOP} failing: the provider answers 500`)],
      ["error", "sync dead-lettered"],
    ]);
    expect(seen[0]).toMatchObject({ errorClass: "ProviderServerError", status: 500 });
    expect(seen[0]?.msg).toContain(
      "up to 3 attempts (SYNC_ATTEMPTS), then dead-lettered as exhausted",
    );
    expect(seen[0]?.msg).toContain("check the provider's status");
    expect(seen[1]).toMatchObject({
      category: "exhausted",
      errorClass: "ProviderServerError",
      status: 500,
    });

    // A minute on: one summary per cause, with the counts.
    now += 61_000;
    digest?.tick();
    const summaries = atInfo(lines).slice(2);
    expect(summaries).toEqual([
      expect.objectContaining({
        level: "warn",
        shop: TEST_SHOP,
        attemptsFailed: orders * 2 - 1,
        total: orders * 2,
      }),
      expect.objectContaining({
        level: "error",
        shop: TEST_SHOP,
        ordersDeadLettered: orders - 1,
        total: orders,
      }),
    ]);
    expect(summaries[0]?.msg).toContain("still failing");
    expect(summaries[1]?.msg).toContain(
      `npx connector dlq list --shop ${TEST_SHOP} --reason exhausted`,
    );
    // Nothing new: no summary.
    now += 61_000;
    digest?.tick();
    expect(atInfo(lines)).toHaveLength(4);

    // The provider answers again: one line per cause says it ended, with the totals.
    p.sandbox.setFaults({});
    await p.send("orders/create", orderPayload(shippedOrder(5_591_100, { fulfillments: [] })));
    await p.drain();
    const ended = atInfo(lines).filter((l) => String(l.msg).includes("no longer"));
    expect(ended).toEqual([
      expect.objectContaining({ level: "info", attemptsFailed: orders * 2 }),
      expect.objectContaining({ level: "info", ordersDeadLettered: orders }),
    ]);
  });

  it("say a store's refused credentials once, not once per order of the paused shop", async () => {
    const { p, lines } = await capturedWorker();
    pipeline = p;
    await p.ctx.shops.upsertShop(TEST_SHOP, {
      providerClientSecretSealed: p.ctx.secrets.seal(
        "not-the-secret",
        sealedFor.providerClientSecret(TEST_SHOP),
      ),
    });
    const orders = 8;
    for (let i = 0; i < orders; i++) {
      await p.send(
        "orders/create",
        orderPayload(shippedOrder(5_592_000 + i, { fulfillments: [] })),
      );
    }
    await deadLetters(p, orders, lines);
    await p.drain();
    expect(lines.filter((l) => l.msg === "sync dead-lettered")).toHaveLength(orders);
    // One line for the refusal, one for the orders the paused shop then turns away.
    const seen = atInfo(lines).filter((l) => l.level === "error");
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ category: "config", errorClass: "ProviderAuthError" });
    expect(seen[1]).toMatchObject({
      category: "config",
      reason: expect.stringContaining("sync is paused"),
    });
  });

  it("say a database that cannot be read once, not once per attempt, dead-letter at the last, and say when it answers again", async () => {
    let down = true;
    const { p, lines } = await capturedWorker({
      env: { SYNC_ATTEMPTS: "2" },
      // The shop's row cannot be read (the database is away) until `down` is cleared.
      shops: (shops) =>
        new Proxy(shops, {
          get(target, key) {
            if (key === "getShop" && down)
              return () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:5432"));
            const value = Reflect.get(target, key);
            return typeof value === "function" ? value.bind(target) : value;
          },
        }),
    });
    pipeline = p;
    const orders = 6;
    for (let i = 0; i < orders; i++) {
      await p.send(
        "orders/create",
        orderPayload(shippedOrder(5_594_000 + i, { fulfillments: [] })),
      );
    }
    const unread = "could not read the shop; will retry";
    // The first attempt of each is retried; the last one dead-letters the order (in Redis, which
    // is up), so that an outage longer than the retries leaves it where an operator looks.
    await deadLetters(p, orders, lines);
    expect(lines.filter((l) => l.msg === unread)).toHaveLength(orders);
    expect(atInfo(lines).map((l) => [l.level, l.msg])).toEqual([
      ["warn", unread],
      ["error", "sync dead-lettered"],
    ]);
    expect(atInfo(lines)[0]).toMatchObject({
      err: { message: "connect ECONNREFUSED 127.0.0.1:5432" },
    });
    const letters = await p.ctx.queues.deadLetter.getWaiting();
    expect(letters.map((l) => [l.data.category, l.data.reason])).toEqual(
      letters.map(() => [
        "exhausted",
        "gave up after 2 attempts: could not read the shop: connect ECONNREFUSED 127.0.0.1:5432",
      ]),
    );

    down = false;
    await p.send("orders/create", orderPayload(shippedOrder(5_594_100, { fulfillments: [] })));
    await p.drain();
    expect(atInfo(lines).filter((l) => String(l.msg).includes("no longer"))).toEqual([
      expect.objectContaining({
        level: "info",
        attemptsFailed: orders,
        msg: expect.stringContaining(`sync of ${TEST_SHOP} no longer failing to read the shop`),
      }),
      expect.objectContaining({
        level: "info",
        ordersDeadLettered: orders,
        msg: expect.stringContaining(`sync of ${TEST_SHOP} no longer dead-lettering`),
      }),
    ]);
  });
});
