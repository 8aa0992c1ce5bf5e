import { afterEach, describe, expect, it } from "vitest";
import { createDeadLetters } from "../../src/ops/index.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import { normalizeRestOrder } from "../../src/shopify/index.ts";
import type { ShopDomain } from "../../src/sync/source-order.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { type ModelOrder, orderPayload } from "../helpers/shopify-order-builder.ts";
import { standInOrder } from "../helpers/standin-orders.ts";

/**
 * Order shapes real stores produce, sent as signed webhooks through the receiver, the queue and
 * the worker to the provider sandbox: what the provider holds and what the connector records.
 */
const order = (id: number, overrides: Partial<ModelOrder> = {}): ModelOrder =>
  standInOrder(id, "2026-11-01T10:00:00-05:00", overrides).model;

/**
 * A walk-in sale at a shop counter, as Shopify's POS sends it: no customer, no address, no
 * shipping line; the items were handed over at the counter (fulfilled at the POS location).
 */
function posSale(model: ModelOrder) {
  const body: Record<string, unknown> = {
    ...orderPayload(model),
    source_name: "pos",
    location_id: model.locationId,
    email: null,
    contact_email: null,
    customer: null,
    shipping_lines: [],
    fulfillment_status: "fulfilled",
  };
  // Shopify leaves the keys out when nothing ships and nobody was named.
  delete body.shipping_address;
  delete body.billing_address;
  return body;
}

let p: Pipeline | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

describe("order shapes, end to end", () => {
  it("dead-letters an order un-cancelled in Shopify after the provider canceled it, once, with what to do", async () => {
    p = await startPipeline();
    const live = order(8_900_101);
    await p.send("orders/create", orderPayload(live));
    const canceled = {
      ...live,
      updatedAt: "2026-11-02T10:00:00-05:00",
      cancelledAt: "2026-11-02T10:00:00-05:00",
    };
    await p.send("orders/cancelled", orderPayload(canceled));
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(live.id))?.canceled).toBe(true);

    // Shopify's order is open again; the provider cannot reopen a canceled order.
    const reopened = { ...canceled, updatedAt: "2026-11-03T10:00:00-05:00", cancelledAt: null };
    await p.send("orders/updated", orderPayload(reopened));
    await p.drain();
    const dead = await p.ctx.queues.deadLetter.getJobs();
    expect(dead).toHaveLength(1);
    expect(dead[0]?.data).toMatchObject({
      orderId: String(live.id),
      category: "provider-conflict",
    });
    expect(dead[0]?.data.reason).toMatch(/open in Shopify but provider order \d+ was canceled/);
    expect(dead[0]?.data.reason).toContain("cancel it in Shopify again");
    expect(dead[0]?.data.attempts).toBe(1);
    const row = await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(live.id));
    expect(row?.lastResult).toBe("dead-lettered");
    expect(p.sandbox.state.orders.find(1001, String(live.id))?.canceled).toBe(true);

    // Cancelled in Shopify again: the two agree, and the dead letter is resolved.
    const again = {
      ...reopened,
      updatedAt: "2026-11-04T10:00:00-05:00",
      cancelledAt: "2026-11-04T10:00:00-05:00",
    };
    await p.send("orders/cancelled", orderPayload(again));
    await p.drain();
    expect(await p.ctx.queues.deadLetter.getJobs()).toHaveLength(0);
    expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(live.id)))?.lastResult).toBe(
      "synced",
    );
  });

  it("dead-letters an open order whose create adopts one the provider holds canceled", async () => {
    p = await startPipeline();
    const live = order(8_900_201);
    const canceled = { ...live, cancelledAt: "2026-11-01T10:00:00-05:00" };
    await p.send("orders/cancelled", orderPayload(canceled));
    await p.drain();
    // The link is retired (a store switched away and back) and Shopify's order is open again:
    // the create is answered 409 with the provider's canceled order, which is adopted.
    await p.ctx.links.retireOrder(TEST_SHOP, String(live.id), "switched away and back");
    await p.send(
      "orders/updated",
      orderPayload({ ...live, updatedAt: "2026-11-02T10:00:00-05:00" }),
    );
    await p.drain();
    const dead = await p.ctx.queues.deadLetter.getJobs();
    expect(dead.map((d) => d.data.category)).toEqual(["provider-conflict"]);
    expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(live.id)))?.lastResult).toBe(
      "dead-lettered",
    );
  });

  it("cancels the provider's lines of an open order whose lines were all refunded, instead of dead-lettering it", async () => {
    p = await startPipeline();
    const live = order(8_900_301);
    await p.send("orders/create", orderPayload(live));
    await p.drain();
    const refunded: ModelOrder = {
      ...live,
      updatedAt: "2026-11-02T10:00:00-05:00",
      lines: live.lines.map((l) => ({ ...l, currentQuantity: 0 })),
    };
    await p.send("orders/updated", orderPayload(refunded));
    // An order first seen with every line refunded (a late webhook, a backfill) is created too.
    const late = order(8_900_401, {
      lines: order(8_900_401).lines.map((l) => ({ ...l, currentQuantity: 0 })),
    });
    await p.send("orders/create", orderPayload(late));
    await p.drain();
    expect(await p.ctx.queues.deadLetter.getJobs()).toHaveLength(0);
    for (const id of [live.id, late.id]) {
      const held = p.sandbox.state.orders.find(1001, String(id));
      expect(held?.canceled).toBe(false);
      // Shipping is not refunded: the order keeps its 5.00 of shipping and nothing else.
      expect(held?.totalMoney).toBe(5);
      expect(held?.lineItems).toHaveLength(1);
      expect(held?.lineItems.every((l) => l.sourceCanceledOn)).toBe(true);
      expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(id)))?.lastResult).toBe("synced");
    }
  });

  it("sends an order split across two locations without the one from an unmapped location, then that one once it is mapped", async () => {
    p = await startPipeline();
    const model = order(8_900_501, {
      lines: [
        {
          id: 8_900_502,
          variantId: 501,
          sku: "A",
          title: "A",
          price: 1000,
          quantity: 1,
          currentQuantity: 1,
        },
        {
          id: 8_900_503,
          variantId: 502,
          sku: "B",
          title: "B",
          price: 1000,
          quantity: 1,
          currentQuantity: 1,
        },
      ],
      updatedAt: "2026-11-02T10:00:00-05:00",
    });
    const shipped = (id: number, lineId: number) => ({
      id,
      status: "success" as const,
      trackingNumber: `1Z${id}`,
      shipmentStatus: "in_transit",
      lineIds: [lineId],
      createdAt: "2026-11-02T10:00:00-05:00",
      updatedAt: "2026-11-02T10:00:00-05:00",
    });
    model.fulfillments.push(shipped(7_101, 8_900_502), shipped(7_102, 8_900_503));
    // The second parcel left from another Shopify location, which the settings do not map.
    const payload = orderPayload(model);
    payload.fulfillments = [
      payload.fulfillments[0],
      { ...payload.fulfillments[1], location_id: 4_999 },
    ] as typeof payload.fulfillments;
    await p.send("orders/fulfilled", payload);
    await p.drain();

    const held = p.sandbox.state.orders.find(1001, String(model.id));
    expect(held?.lineItems).toHaveLength(2);
    expect(held?.fulfillments.map((f) => f.sourceFulfillmentId)).toEqual(["7101"]);
    const dead = await p.ctx.queues.deadLetter.getJobs();
    expect(dead).toHaveLength(1);
    expect(dead[0]?.data.category).toBe("config");
    expect(dead[0]?.data.reason).toBe(
      "the order is at the provider without a fulfillment: fulfillments.1.fulfillmentLocationId: Shopify location 4999 is not mapped to a provider fulfillment location; map it in the settings",
    );
    expect(dead[0]?.data.fields).toEqual([
      expect.objectContaining({ path: "fulfillments.1.fulfillmentLocationId", ref: "4999" }),
    ]);
    expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(model.id)))?.lastResult).toBe(
      "dead-lettered",
    );

    // The merchant maps the location; the retry sends only the fulfillment that was held.
    await p.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 77, "4999": 78 } });
    const calls = p.sandbox.state.admittedFor(1001).length;
    await createDeadLetters(p.ctx).retry(String(dead[0]?.id));
    await p.drain();
    expect(await p.ctx.queues.deadLetter.getJobs()).toHaveLength(0);
    const after = p.sandbox.state.orders.find(1001, String(model.id));
    expect(
      after?.fulfillments.map((f) => [f.sourceFulfillmentId, f.fulfillmentLocationId]),
    ).toEqual([
      ["7101", 77],
      ["7102", 78],
    ]);
    expect(p.sandbox.state.admittedFor(1001).length - calls).toBe(1);
    expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(model.id)))?.lastResult).toBe(
      "synced",
    );
  });

  it("follows a refund of a custom amount, even one larger than the goods, without a negative amount or a dead letter", async () => {
    p = await startPipeline();
    // 10.00 of goods, 5.00 shipping, 0.80 tax: 15.80.
    const model = order(8_900_501);
    await p.send("orders/create", orderPayload(model));
    await p.drain();
    const money = (amount: string) => ({
      shop_money: { amount, currency_code: "USD" },
      presentment_money: { amount, currency_code: "USD" },
    });
    // The merchant refunds a custom amount: no refund lines, only an order adjustment. Shopify's
    // current total falls; the lines, shipping and tax stay as they were.
    const refunded = (updatedAt: string, refund: string, total: string) => ({
      ...orderPayload({ ...model, updatedAt }),
      financial_status: "partially_refunded",
      current_total_price: total,
      current_total_price_set: money(total),
      refunds: [
        {
          id: 8_900_591,
          order_id: model.id,
          created_at: updatedAt,
          processed_at: updatedAt,
          note: "goodwill",
          restock: false,
          refund_line_items: [],
          transactions: [],
          order_adjustments: [
            {
              id: 8_900_592,
              order_id: model.id,
              refund_id: 8_900_591,
              amount: `-${refund}`,
              tax_amount: "0.00",
              kind: "refund_discrepancy",
              reason: "Refund discrepancy",
              amount_set: money(`-${refund}`),
              tax_amount_set: money("0.00"),
            },
          ],
        },
      ],
    });
    await p.send("orders/updated", refunded("2026-11-02T10:00:00-05:00", "4.00", "11.80"));
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(model.id))).toMatchObject({
      totalMoney: 11.8,
      shippingMoney: 5,
      taxMoney: 0.8,
      subtotalMoney: 6,
    });
    // Refunded beyond the goods: the rest comes off the shipping, then the tax.
    await p.send("orders/updated", refunded("2026-11-03T10:00:00-05:00", "12.00", "3.80"));
    await p.drain();
    const held = p.sandbox.state.orders.find(1001, String(model.id));
    expect(held).toMatchObject({
      totalMoney: 3.8,
      shippingMoney: 3,
      taxMoney: 0.8,
      subtotalMoney: 0,
      canceled: false,
    });
    expect(held?.lineItems).toHaveLength(1);
    expect(await p.ctx.queues.deadLetter.getJobs()).toHaveLength(0);
    expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(model.id)))?.lastResult).toBe(
      "synced",
    );
  });

  it("keeps a walk-in point-of-sale sale out of the provider, not dead-lettered, and sends it once it gains an address", async () => {
    p = await startPipeline();
    const sale = order(8_900_601, { email: null, shippingCents: 0 });
    await p.send("orders/create", posSale(sale));
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(sale.id))).toBeUndefined();
    expect(await p.ctx.queues.deadLetter.getJobs()).toHaveLength(0);
    expect(await p.ctx.links.failureOf(TEST_SHOP, String(sale.id))).toBeNull();
    expect(await p.ctx.shops.keptOutOrder(TEST_SHOP, String(sale.id))).toMatchObject({
      orderName: `#${sale.number}`,
      reason: "no-address",
    });
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "no-address")).toBe(1);
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "test")).toBe(0);

    // The merchant adds the customer and an address in Shopify: the next webhook sends it.
    const edited = orderPayload({
      ...sale,
      email: "walkin@example.com",
      updatedAt: "2026-11-02T10:00:00-05:00",
    });
    await p.send("orders/updated", { ...edited, source_name: "pos", shipping_lines: [] });
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, String(sale.id))?.channel).toBe("pos");
    expect((await p.ctx.links.getOrderLinkRow(TEST_SHOP, String(sale.id)))?.lastResult).toBe(
      "synced",
    );
    // Sent now: no longer counted as kept out.
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "no-address")).toBe(0);
  });

  it("keeps out a counter sale whose customer has no street, but not one that ships or whose customer Shopify withheld", async () => {
    p = await startPipeline();
    // The customer is known at the counter by name, email and country only; nothing ships.
    const countryOnly = (model: ModelOrder) => ({
      ...posSale(model),
      customer: orderPayload(model).customer,
      email: model.email,
      billing_address: { name: "Grace Hopper", country: "United States", country_code: "US" },
    });
    const sale = order(8_900_611, { shippingCents: 0 });
    await p.send("orders/create", countryOnly(sale));
    // Only the street missing, the rest of the address there: still nowhere to ship to.
    const street = order(8_900_612, { shippingCents: 0 });
    const { billing_address: full } = orderPayload(street);
    await p.send("orders/create", {
      ...posSale(street),
      customer: orderPayload(street).customer,
      billing_address: { ...full, address1: null, address2: null },
    });
    // Shipped to that customer: something ships, so the missing street is the order's to fix.
    const shipped = order(8_900_613);
    await p.send("orders/create", {
      ...countryOnly(shipped),
      shipping_lines: orderPayload(shipped).shipping_lines,
    });
    // Shopify withheld the customer (protected customer data): the app's access to fix.
    const withheld = order(8_900_614, { email: null, shippingCents: 0 });
    await p.send("orders/create", {
      ...posSale(withheld),
      customer: { id: 8_900_614, email: null, first_name: null, last_name: null, phone: null },
      billing_address: {
        ...orderPayload(withheld).billing_address,
        address1: null,
        name: null,
        phone: null,
      },
    });
    await p.drain();

    for (const kept of [sale, street]) {
      expect(p.sandbox.state.orders.find(1001, String(kept.id))).toBeUndefined();
      expect(await p.ctx.shops.keptOutOrder(TEST_SHOP, String(kept.id))).toMatchObject({
        orderName: `#${kept.number}`,
        reason: "no-address",
      });
    }
    const dead = await p.ctx.queues.deadLetter.getJobs();
    expect(dead.map((d) => [d.data.orderId, d.data.category]).sort()).toEqual([
      [String(shipped.id), "mapping"],
      [String(withheld.id), "protected-data"],
    ]);
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "no-address")).toBe(2);
  });

  it("still dead-letters an order without an address that has a shipping line, or that the provider already has", async () => {
    p = await startPipeline();
    // Something ships, but Shopify has nowhere to ship it: the order's data is wrong.
    const shipped = order(8_900_701);
    const noAddress = { ...posSale(shipped), shipping_lines: orderPayload(shipped).shipping_lines };
    await p.send("orders/create", { ...noAddress, customer: orderPayload(shipped).customer });
    // Sent before with its address, now without one: the provider's order is not left behind.
    const linked = order(8_900_801);
    await p.send("orders/create", orderPayload(linked));
    await p.drain();
    const later = { ...linked, updatedAt: "2026-11-02T10:00:00-05:00" };
    await p.send("orders/updated", { ...posSale(later), customer: orderPayload(later).customer });
    await p.drain();
    const dead = await p.ctx.queues.deadLetter.getJobs();
    expect(dead.map((d) => [d.data.orderId, d.data.category]).sort()).toEqual([
      [String(shipped.id), "mapping"],
      [String(linked.id), "mapping"],
    ]);
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "no-address")).toBe(0);
  });

  it("resolves a point-of-sale sale an older connector dead-lettered when the operator retries it", async () => {
    p = await startPipeline();
    const sale = order(8_900_901, { email: null, shippingCents: 0 });
    // As an older connector left it: the order's state stored, its failure recorded and its
    // dead letter waiting (walk-in sales were dead-lettered as protected-data or mapping).
    const stored = normalizeRestOrder(TEST_SHOP as ShopDomain, posSale(sale));
    await p.ctx.snapshots.storeOrder(stored);
    const reason = "the order cannot be sent as it is: shippingAddress: …";
    await p.ctx.links.markFailed(
      TEST_SHOP,
      String(sale.id),
      "dead-lettered",
      { message: reason, category: "mapping", fields: [{ path: "shippingAddress" }] },
      `#${sale.number}`,
    );
    const at = new Date().toISOString();
    const id = deadLetterId(TEST_SHOP, String(sale.id));
    await p.ctx.queues.addDeadLetter(id, {
      shop: TEST_SHOP,
      orderId: String(sale.id),
      topic: "orders/create",
      reason,
      category: "mapping",
      errorClass: "MappingError",
      attempts: 1,
      firstFailedAt: at,
      lastFailedAt: at,
    });

    await createDeadLetters(p.ctx).retry(id);
    await p.drain();
    expect(await p.ctx.queues.deadLetter.getJobs()).toHaveLength(0);
    expect(await p.ctx.links.failureOf(TEST_SHOP, String(sale.id))).toBeNull();
    expect(await p.ctx.shops.countKeptOut(TEST_SHOP, "no-address")).toBe(1);
    expect(p.sandbox.state.orders.find(1001, String(sale.id))).toBeUndefined();
  });
});
