import { describe, expect, it } from "vitest";
import { OrderCreate } from "../../src/provider/schemas.ts";
import { mapOrder, type ShopifyLineItemId, type ShopifyLocationId } from "../../src/sync/index.ts";
import {
  mapErrors,
  mapOk,
  shopSettings,
  sourceFulfillment,
  sourceLine,
  sourceOrder,
} from "./factories.ts";

describe("mapOrder: order-level fields", () => {
  it("maps identity, dates, weight, shipping title, note and channel of a plain order", () => {
    const { order, fulfillments, warnings } = mapOk(sourceOrder({ note: "Leave at the door" }));
    expect(order).toEqual({
      storeId: 1001,
      sourceOrderId: "5001",
      orderNumber: "1001",
      orderName: "#1001",
      isShippingProtected: false,
      customerCurrencyCode: "USD",
      customer: {
        sourceCustomerId: "9001",
        firstName: "Ada",
        lastName: "Lovelace",
        email: "ada@example.com",
      },
      lineItems: [
        {
          sourceLineItemId: "7001",
          productId: "8001",
          variantId: "8101",
          name: "T-shirt - Blue / L",
          quantity: 2,
          sku: "TS-BL-L",
          tax: 1.6,
          price: 10,
          vendor: "Acme",
        },
      ],
      shippingMoney: 5,
      subtotalMoney: 20,
      taxMoney: 1.6,
      totalMoney: 26.6,
      billingAddress: {
        name: "Ada Lovelace",
        firstName: "Ada",
        lastName: "Lovelace",
        line1: "1 Main St",
        city: "Springfield",
        stateOrProvinceCode: "IL",
        postalCode: "62701",
        countryCode: "US",
      },
      shippingAddress: {
        name: "Ada Lovelace",
        firstName: "Ada",
        lastName: "Lovelace",
        line1: "1 Main St",
        city: "Springfield",
        stateOrProvinceCode: "IL",
        postalCode: "62701",
        countryCode: "US",
      },
      sourceCreatedOn: "2026-11-01T10:00:00-05:00",
      sourceUpdatedOn: "2026-11-01T10:05:00-05:00",
      grams: 300,
      shippingTitle: "Standard",
      notes: "Leave at the door",
      channel: "web",
    });
    expect(fulfillments).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it("sends an absent note, shipping title and channel as empty strings so an update clears them", () => {
    const { order } = mapOk(sourceOrder({ note: null, shippingTitle: null, channel: null }));
    expect(order).toMatchObject({ notes: "", shippingTitle: "", channel: "" });
  });

  it("leaves grams out when Shopify does not know the weight", () => {
    expect(mapOk(sourceOrder({ totalWeightGrams: null })).order).not.toHaveProperty("grams");
  });

  it("keeps the cancellation out of the order body: the cancel call carries it", () => {
    const { order } = mapOk(
      sourceOrder({ cancelledAt: "2026-11-03T08:00:00Z", cancelReason: "customer" }),
    );
    expect(order).not.toHaveProperty("sourceCanceledOn");
    expect(order).not.toHaveProperty("canceledReason");
  });

  it("marks the order protected when a line sent has a protection variant", () => {
    const protection = sourceLine({
      id: "7002" as ShopifyLineItemId,
      variantId: "999",
      sku: "PROTECT",
      quantity: 1,
      currentQuantity: 1,
      unitPriceCents: 225,
      taxCents: 0,
    });
    const order = sourceOrder({ lineItems: [sourceLine(), protection] });
    expect(mapOk(order, shopSettings({ protectionVariantIds: ["999"] })).order).toMatchObject({
      isShippingProtected: true,
    });
    expect(mapOk(order).order.isShippingProtected).toBe(false);
  });

  it("does not mark the order protected once its protection line was removed", () => {
    const removed = sourceLine({
      id: "7002" as ShopifyLineItemId,
      variantId: "999",
      currentQuantity: 0,
    });
    const order = sourceOrder({ lineItems: [sourceLine(), removed] });
    expect(mapOk(order, shopSettings({ protectionVariantIds: ["999"] })).order).toMatchObject({
      isShippingProtected: false,
    });
  });

  it("says whose each error is to fix: the shop's settings, the customer's identity, the order's data", () => {
    const result = mapOrder(
      sourceOrder({ customer: null, email: null, phone: null }),
      shopSettings({ currency: "EUR" }),
    );
    if (result.ok) throw new Error("expected errors");
    expect(result.errors.map((e) => [e.field, e.kind])).toEqual([
      ["currency", "settings"],
      ["customer.email", "customer"],
    ]);
  });

  it("refuses an order in another currency than the provider store's, naming currency", () => {
    expect(mapErrors(sourceOrder(), shopSettings({ currency: "EUR" }))).toEqual(["currency"]);
  });

  it("reports every problem of an order at once, each by its field", () => {
    const fields = mapErrors(
      sourceOrder({
        email: null,
        customer: null,
        billingAddress: null,
        shippingAddress: null,
        lineItems: [],
        fulfillments: [sourceFulfillment({ locationId: "4040" as ShopifyLocationId })],
      }),
    );
    expect(fields.sort()).toEqual([
      "customer.email",
      "fulfillments.0.fulfillmentLocationId",
      "lineItems",
      "shippingAddress",
    ]);
  });

  it("says in each refusal what to fix and where: the settings or the order in Shopify", () => {
    const result = mapOrder(
      sourceOrder({ email: null, customer: null, billingAddress: null, shippingAddress: null }),
      shopSettings({ currency: "EUR" }),
    );
    if (result.ok) expect.fail("the order must be refused");
    const fixes = Object.fromEntries(result.errors.map((e) => [e.field, e.message]));
    expect(fixes.currency).toMatch(/: choose a provider store in USD in the settings$/);
    expect(fixes.shippingAddress).toMatch(/: add one to the order in Shopify$/);
    expect(fixes["customer.email"]).toMatch(/: add one to the order in Shopify$/);
  });

  it("returns what the provider's schema refuses as errors by field path, never a bad body", () => {
    // A date without an offset passes every mapping rule but not the provider's contract.
    const result = mapOrder(sourceOrder({ createdAt: "2026-11-01T10:00:00" }), shopSettings());
    expect(result).toMatchObject({ ok: false, errors: [{ field: "sourceCreatedOn" }] });
  });

  it("produces bodies the provider's OrderCreate schema accepts", () => {
    const { order } = mapOk(sourceOrder());
    expect(OrderCreate.safeParse(order).success).toBe(true);
  });
});
