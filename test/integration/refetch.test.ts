import { afterEach, describe, expect, it } from "vitest";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload, orderTotals } from "../helpers/shopify-order-builder.ts";
import { AMPLE_BUDGET, standInOrder } from "../helpers/standin-orders.ts";

let pipeline: Pipeline;
afterEach(async () => {
  await pipeline?.close();
});

describe("stale snapshot refetch", () => {
  it("reads the edited order from the Admin API when only orders/edited arrives", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    const { model } = standInOrder(42, "2026-11-01T10:00:00Z");
    model.lines[0] = {
      ...(model.lines[0] as (typeof model.lines)[0]),
      quantity: 3,
      currentQuantity: 3,
    };
    // orders/create reaches the connector through the stand-in's signed delivery.
    const created = orderPayload(model);
    const deliveries = await pipeline.shopify.upsertOrder(TEST_SHOP, created);
    expect(deliveries.map((d) => d.status)).toEqual([200]);
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.find(1001, "42")?.totalMoney).toBe(
      orderTotals(model).total / 100,
    );

    // The merchant removes two units; Shopify's orders/updated is lost, only the edit diff comes.
    const edited = { ...model, updatedAt: "2026-11-02T10:00:00Z" };
    edited.lines = [{ ...(model.lines[0] as (typeof model.lines)[0]), currentQuantity: 1 }];
    await pipeline.shopify.upsertOrder(TEST_SHOP, orderPayload(edited), { deliver: false });
    const requestsBefore = pipeline.shopify.state.counters.graphqlRequests;
    const hint = await pipeline.send("orders/edited", {
      order_edit: {
        id: 5001,
        order_id: 42,
        committed_at: "2026-11-02T10:00:00Z",
        created_at: "2026-11-02T09:59:00Z",
        line_items: { additions: [], removals: [{ id: 421, delta: 2 }] },
      },
    });
    expect(hint.status).toBe(200);
    await pipeline.drain();

    expect(pipeline.shopify.state.counters.graphqlRequests).toBeGreaterThan(requestsBefore);
    expect(pipeline.sandbox.state.orders.find(1001, "42")?.totalMoney).toBe(
      orderTotals(edited).total / 100,
    );
  });
});
