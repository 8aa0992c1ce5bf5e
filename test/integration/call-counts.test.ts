import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";
import {
  fulfillmentPayload,
  type ModelOrder,
  orderPayload,
} from "../helpers/shopify-order-builder.ts";

/**
 * The provider calls each step of an order's life costs: the minimum the provider's API allows
 * (line items are immutable, so a quantity change is a cancel and an add).
 */
let pipeline: Pipeline;
beforeAll(async () => {
  pipeline = await startPipeline();
});
afterAll(() => pipeline.close());

const model: ModelOrder = {
  id: 7_100_000_001,
  number: 3001,
  email: "counts@example.com",
  createdAt: "2026-11-01T10:00:00Z",
  updatedAt: "2026-11-01T10:00:00Z",
  cancelledAt: null,
  note: null,
  shippingCents: 500,
  taxBps: 800,
  lines: [
    { id: 1, variantId: 11, sku: "A", title: "A", price: 1000, quantity: 1, currentQuantity: 1 },
  ],
  fulfillments: [],
  locationId: 4001,
};
let minute = 0;
async function callsFor(topic: string, change: () => unknown): Promise<number> {
  const before = pipeline.sandbox.state.admittedFor(1001).length;
  minute++;
  model.updatedAt = new Date(Date.parse("2026-11-01T10:00:00Z") + minute * 60_000).toISOString();
  const body = change() ?? orderPayload(model);
  await pipeline.send(topic, body);
  await pipeline.drain();
  return pipeline.sandbox.state.admittedFor(1001).length - before;
}

describe("provider calls per lifecycle step", () => {
  it("costs the minimum for each step", async () => {
    const counts: Record<string, number> = {};
    counts.create = await callsFor("orders/create", () => undefined);
    // An update Shopify sends for a change the provider does not hold (payment, tags).
    counts["irrelevant update"] = await callsFor("orders/updated", () => undefined);
    counts["note changed"] = await callsFor("orders/updated", () => {
      model.note = "gift";
    });
    counts["line added"] = await callsFor("orders/updated", () => {
      model.lines.push({
        id: 2,
        variantId: 12,
        sku: "B",
        title: "B",
        price: 500,
        quantity: 1,
        currentQuantity: 1,
      });
    });
    counts["quantity changed"] = await callsFor("orders/updated", () => {
      const line = model.lines[1];
      if (line) {
        line.quantity = 3;
        line.currentQuantity = 3;
      }
    });
    counts["line removed"] = await callsFor("orders/updated", () => {
      const line = model.lines[1];
      if (line) line.currentQuantity = 0;
    });
    counts.fulfilled = await callsFor("fulfillments/create", () => {
      model.fulfillments.push({
        id: 91,
        status: "success",
        trackingNumber: "1Z9",
        shipmentStatus: "in_transit",
        lineIds: [1],
        createdAt: model.updatedAt,
        updatedAt: model.updatedAt,
      });
      return fulfillmentPayload(model, model.fulfillments[0] as never);
    });
    counts["tracking updated"] = await callsFor("fulfillments/update", () => {
      const f = model.fulfillments[0];
      if (!f) return;
      f.shipmentStatus = "delivered";
      f.updatedAt = model.updatedAt;
      return fulfillmentPayload(model, f);
    });
    counts.canceled = await callsFor("orders/cancelled", () => {
      model.cancelledAt = model.updatedAt;
    });
    counts["update after cancel"] = await callsFor("orders/updated", () => {
      model.note = "too late";
    });
    console.log(`provider calls per step: ${JSON.stringify(counts)}`);
    expect(counts).toEqual({
      create: 1,
      "irrelevant update": 0,
      "note changed": 1,
      // The totals change (order update) and a line item is added.
      "line added": 2,
      // Update the totals, cancel the old line item, add its replacement.
      "quantity changed": 3,
      "line removed": 2,
      fulfilled: 1,
      "tracking updated": 1,
      canceled: 1,
      "update after cancel": 0,
    });
  });
});
