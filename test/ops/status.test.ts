import { afterEach, describe, expect, it } from "vitest";
import type { ConnectorStatus } from "../../src/ops/index.ts";
import { runCli } from "../helpers/cli.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const TOKEN = "status-token-0123456789abcdef";

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
});

/** One order synced, one dead-lettered (its fulfillment location is unknown), one backfill. */
async function busyPipeline() {
  const p = await startPipeline({
    env: { ADMIN_TOKEN: TOKEN },
    sandbox: { fulfillmentLocations: { 1001: [77] } },
  });
  await p.send("orders/create", orderPayload(shippedOrder(5_560_001)));
  await p.drain();
  await p.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 78 } });
  await p.send("orders/create", orderPayload(shippedOrder(5_560_011)));
  await p.drain();
  const updated = Date.now();
  await p.ctx.db.orm.insert(p.ctx.db.t.backfills).values({
    shop: TEST_SHOP,
    done: 250,
    total: 1000,
    status: "running",
    startedAt: new Date(updated - 60_000).toISOString(),
    updatedAt: new Date(updated).toISOString(),
  });
  return p;
}

function expectBusyStatus(status: ConnectorStatus) {
  const sync = status.queues.find((q) => q.name === "sync");
  expect(sync?.counts).toMatchObject({ waiting: 0, active: 0, delayed: 0 });
  // Sync jobs are removed as they finish: no completed count that would always be 0; the
  // orders synced are the shop's, from the database (below).
  expect(sync?.counts).not.toHaveProperty("completed");
  expect(status.queues.find((q) => q.name === "backfill")?.counts).toHaveProperty("completed");
  expect(sync?.oldestPendingAgeMs).toBeNull();
  expect(status.queues.map((q) => q.name).sort()).toEqual(
    ["backfill", "dead-letter", "maintenance", "product-import", "provider-events", "sync"].sort(),
  );
  const shop = status.shops.find((s) => s.shop === TEST_SHOP);
  expect(shop?.lastSyncedAt).not.toBeNull();
  expect(shop?.orders.synced).toBe(1);
  // Two orders and one fulfillment reached the provider; the refused fulfillment counts too.
  expect(shop?.limiter).toMatchObject({ limit: 100, used: 4, remaining: 96, blockedUntil: null });
  expect(status.deadLetters).toEqual({ total: 1, byReason: { "provider-validation": 1 } });
  expect(status.backfills).toHaveLength(1);
  expect(status.backfills[0]).toMatchObject({ done: 250, total: 1000, percent: 25 });
  // A quarter done in a minute: about three minutes left.
  expect(status.backfills[0]?.etaSeconds).toBe(180);
}

describe("status", { timeout: 120_000 }, () => {
  it("reports queues, budget, last sync, dead letters and backfills from the CLI", async () => {
    pipeline = await busyPipeline();
    // Both jobs (the synced order's and the dead-lettered one's) were removed as they finished.
    expect(await pipeline.ctx.queues.sync.getJobCounts("completed")).toEqual({ completed: 0 });
    const json = await runCli(pipeline.ctx, ["status", "--json"]);
    expect(json.stderr).toBe("");
    expectBusyStatus(JSON.parse(json.stdout) as ConnectorStatus);

    const text = await runCli(pipeline.ctx, ["status", "--shop", TEST_SHOP]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("budget: 4/100 used in the last 60s, 96 left");
    expect(text.stdout).toContain("provider-validation");
    // One column per count, whatever the queue's name (product-import, provider-events).
    const queueLines = text.stdout.split("\n").filter((line) => / waiting \d+, active /.test(line));
    expect(queueLines.map((line) => line.split(" ")[2])).toContain("provider-events");
    expect(new Set(queueLines.map((line) => line.indexOf(" waiting ")))).toHaveProperty("size", 1);
    expect(text.stdout).toMatch(/#\d+ lifecycle-shop\.myshopify\.com running: 250\/1000 \(25%\)/);
  });

  it("serves the same report at /admin/api/status, behind the token", async () => {
    pipeline = await busyPipeline();
    expect((await pipeline.web.app.request("/admin/api/status")).status).toBe(401);
    const response = await pipeline.web.app.request(`/admin/api/status?shop=${TEST_SHOP}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    const status = (await response.json()) as ConnectorStatus;
    expectBusyStatus(status);
    expect(status.shops.map((s) => s.shop)).toEqual([TEST_SHOP]);

    // The dashboard shows the sync queue without a completed tab, and says why.
    const board = await pipeline.web.app.request("/admin/queues/api/queues", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const listed = (await board.json()) as {
      queues: { name: string; statuses: string[]; description?: string }[];
    };
    const sync = listed.queues.find((q) => q.name === "sync");
    expect(sync?.statuses).toContain("failed");
    expect(sync?.statuses).not.toContain("completed");
    expect(sync?.description).toContain("removed as they finish");
    expect(listed.queues.find((q) => q.name === "backfill")?.statuses).toContain("completed");

    const bad = await pipeline.web.app.request("/admin/api/status?shop=nope", {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { fields: unknown } }).error.fields).toEqual([
      { path: "shop", message: "must be a *.myshopify.com domain" },
    ]);
    // A misspelt parameter is refused, not answered with every shop's report.
    const typo = await pipeline.web.app.request(`/admin/api/status?shopp=${TEST_SHOP}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(typo.status).toBe(400);
    expect(((await typo.json()) as { error: { fields: unknown } }).error.fields).toEqual([
      { path: "shopp", message: "unknown field" },
    ]);
  });
});
