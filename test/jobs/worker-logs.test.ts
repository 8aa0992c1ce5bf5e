import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { type SyncWorkers, startSyncWorker } from "../../src/jobs/sync-worker.ts";
import { createLogger } from "../../src/lib/logger.ts";
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
async function capturedWorker() {
  const p = await startPipeline({ workers: 0, sandbox: { fulfillmentLocations: { 1001: [77] } } });
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
  worker = startSyncWorker(p.ctx, { concurrency: 2 });
  return { p, lines, raw };
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
