import { afterEach, describe, expect, it } from "vitest";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.close();
  pipeline = undefined;
});

describe("a create the provider answered 429", () => {
  it("is sent again without a lookup: a 429 means nothing was created", async () => {
    // The sandbox allows 5 calls a second; the connector is not told, so it learns from the 429.
    pipeline = await startPipeline({
      sandbox: { rateLimit: 5, windowMs: 1_000 },
      env: { PROVIDER_RATE_LIMIT: "1000", PROVIDER_RATE_WINDOW_MS: "1000" },
    });
    // Another client has spent the whole budget of the store.
    pipeline.sandbox.consume(1001, 5);
    const model = newModelOrder(1, 1001);
    expect((await pipeline.send("orders/create", orderPayload(model))).status).toBe(200);
    await pipeline.drain(10_000);

    const calls = pipeline.sandbox.state.arrivals.map((a) => `${a.method} ${a.path} ${a.status}`);
    expect(calls[0]).toBe("POST /v1/orders 429");
    expect(calls.filter((c) => c.startsWith("GET /v1/orders"))).toEqual([]);
    expect(calls.filter((c) => c === "POST /v1/orders 201")).toHaveLength(1);
    expect(pipeline.sandbox.state.orders.all).toHaveLength(1);
  });

  it("is looked up before a resend when an earlier attempt may have reached the provider", async () => {
    pipeline = await startPipeline({
      sandbox: { faults: { dropAfterCommitRate: 1, seed: 1 } },
    });
    const model = newModelOrder(2, 2001);
    expect((await pipeline.send("orders/create", orderPayload(model))).status).toBe(200);
    // Every answer is dropped after the commit: let the first attempt commit, then stop faults.
    while (pipeline.sandbox.state.orders.all.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    pipeline.sandbox.setFaults({});
    await pipeline.drain(10_000);
    const calls = pipeline.sandbox.state.arrivals.map((a) => `${a.method} ${a.path}`);
    expect(calls.filter((c) => c === "GET /v1/orders").length).toBeGreaterThan(0);
    expect(pipeline.sandbox.state.orders.all).toHaveLength(1);
  });
});
