import { afterEach, describe, expect, it } from "vitest";
import { type InstallHarness, startInstallHarness } from "../helpers/install-harness.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/** Test orders (`test: true`) stay out of the provider unless the shop asks, and are counted. */
let p: Pipeline | undefined;
let h: InstallHarness | undefined;
afterEach(async () => {
  await p?.close();
  await h?.close();
  p = undefined;
  h = undefined;
});

describe("test orders", () => {
  it("are not sent by default, counted once each, and sent once the shop asks", async () => {
    p = await startPipeline();
    const model = newModelOrder(91, 91_000);
    const body = { ...orderPayload(model), test: true };
    await p.send("orders/create", body);
    await p.send("orders/updated", { ...body, updated_at: "2026-11-02T10:00:00Z" });
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(model.id))).toBeUndefined();
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "test")).toBe(1);
    expect(await p.ctx.queues.deadLetter.count()).toBe(0);

    await p.ctx.shops.updateSettings(TEST_SHOP, { sendTestOrders: true });
    await p.send("orders/updated", { ...body, updated_at: "2026-11-03T10:00:00Z" });
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(model.id))).toBeDefined();
  });

  it("keep following Shopify once sent, when the setting is turned off afterwards", async () => {
    p = await startPipeline();
    await p.ctx.shops.updateSettings(TEST_SHOP, { sendTestOrders: true });
    const model = newModelOrder(92, 92_000);
    const body = { ...orderPayload(model), test: true };
    await p.send("orders/create", body);
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(model.id))?.canceled).toBe(false);

    // The merchant stops sending test orders, then cancels this one in Shopify.
    await p.ctx.shops.updateSettings(TEST_SHOP, { sendTestOrders: false });
    const canceledAt = "2026-11-03T10:00:00Z";
    await p.send("orders/cancelled", {
      ...orderPayload({ ...model, updatedAt: canceledAt, cancelledAt: canceledAt }),
      test: true,
    });
    // A new test order is still kept out.
    const other = newModelOrder(93, 93_000);
    await p.send("orders/create", { ...orderPayload(other), test: true });
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(model.id))?.canceled).toBe(true);
    expect(p.sandbox.state.orders.find(1001, String(other.id))).toBeUndefined();
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "test")).toBe(1);
  });

  it("are switched on and off on the settings page, which shows the count", async () => {
    h = await startInstallHarness();
    const harness = h;
    const SHOP = "test-orders.myshopify.com";
    const { jar } = await harness.install(SHOP);
    const page = await (await harness.get("/settings", jar)).text();
    expect(page).toContain("<strong>0</strong> test orders were not sent");
    const saved = await harness.postForm("/settings/test-orders", { sendTestOrders: "on" }, jar);
    expect(saved.status).toBe(303);
    expect((await harness.ctx.shops.getShop(SHOP))?.sendTestOrders).toBe(true);
    const after = await (
      await harness.get(saved.headers.get("location") ?? "/settings", jar)
    ).text();
    expect(after).toContain("Test orders will be sent to the provider.");
  });

  it("are counted on the settings page next to the sales kept out for having no address", async () => {
    h = await startInstallHarness();
    const SHOP = "kept-out.myshopify.com";
    const { jar } = await h.install(SHOP);
    const before = await (await h.get("/settings", jar)).text();
    expect(before).not.toContain('data-count="not-shipped"');
    await h.ctx.shops.markKeptOut(SHOP, "7001", "#1001", "no-address");
    await h.ctx.shops.markKeptOut(SHOP, "7002", "#1002", "no-address");
    await h.ctx.shops.markKeptOut(SHOP, "7003", "#1003", "test");
    const page = await (await h.get("/settings", jar)).text();
    expect(page).toContain(
      "<strong>2</strong> orders were not sent: sold without an address to ship to and nothing ships (such as a sale at your shop counter).",
    );
    expect(page).toContain("<strong>1</strong> test order was not sent");
  });
});
