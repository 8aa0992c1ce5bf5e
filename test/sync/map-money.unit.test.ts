import { describe, expect, it } from "vitest";
import { toCents } from "../../src/provider/schemas.ts";
import type { SourceOrder } from "../../src/sync/index.ts";
import { mapErrors, mapOk, shopSettings, sourceLine, sourceOrder } from "./factories.ts";

const money = (overrides: Partial<SourceOrder["money"]>): SourceOrder["money"] => ({
  ...sourceOrder().money,
  ...overrides,
});

describe("mapOrder: money", () => {
  it("sends a tax-exclusive order's current shipping, tax and total, and their difference as subtotal", () => {
    const { order } = mapOk(sourceOrder());
    expect(order).toMatchObject({
      shippingMoney: 5,
      subtotalMoney: 20,
      taxMoney: 1.6,
      totalMoney: 26.6,
    });
  });

  it("sends a tax-inclusive order with a discount and a tip net of tax, the tip in the subtotal (docs/mapping.md example)", () => {
    // 2 × €30.25 incl. 21% VAT with €6.05 off: goods €54.45 incl. VAT 9.45. Shipping €6.05 incl.
    // VAT 1.05. Tip €2.00. Shopify: subtotal 54.45, tax 10.50, shipping 6.05, total 62.50.
    const order = sourceOrder({
      currency: "EUR",
      presentmentCurrency: "EUR",
      taxesIncluded: true,
      money: {
        subtotalCents: 5445,
        shippingCents: 605,
        shippingTaxCents: 105,
        taxCents: 1050,
        totalCents: 6250,
        discountCents: 605,
        tipCents: 200,
        dutiesCents: 0,
      },
      presentmentTotalCents: 6250,
      lineItems: [sourceLine({ unitPriceCents: 3025, discountCents: 605, taxCents: 945 })],
    });
    const { order: body, warnings } = mapOk(order, shopSettings({ currency: "EUR" }));
    expect(body).toMatchObject({
      shippingMoney: 5,
      taxMoney: 10.5,
      // 62.50 − 5.00 − 10.50: 45.00 of goods net of VAT, plus the 2.00 tip.
      subtotalMoney: 47,
      totalMoney: 62.5,
    });
    // (2 × 30.25 − 6.05) ÷ 2 = 27.225, rounded half up to the cent.
    expect(body.lineItems[0]).toMatchObject({ price: 27.23, tax: 9.45, quantity: 2 });
    expect(warnings).toEqual([]);
  });

  it("puts duties into the subtotal, since Shopify's total includes them", () => {
    const { order, warnings } = mapOk(
      sourceOrder({ money: money({ dutiesCents: 300, totalCents: 2960 }) }),
    );
    expect(order).toMatchObject({ subtotalMoney: 23, totalMoney: 29.6 });
    expect(warnings).toEqual([]);
  });

  it("keeps total = shipping + subtotal + tax to the cent with amounts that float arithmetic gets wrong", () => {
    const { order } = mapOk(
      sourceOrder({ money: money({ shippingCents: 10, taxCents: 20, totalCents: 2030 }) }),
    );
    expect(order).toMatchObject({ shippingMoney: 0.1, taxMoney: 0.2, subtotalMoney: 20 });
    expect(toCents(order.totalMoney)).toBe(
      toCents(order.shippingMoney) + toCents(order.subtotalMoney) + toCents(order.taxMoney),
    );
  });

  it("takes a refund of a custom amount off the subtotal, lines, shipping and tax as they were", () => {
    // 20.00 of goods, 5.00 shipping, 1.60 tax; 12.00 refunded as a custom amount (no refund
    // lines, an order adjustment only): Shopify's current total is 14.60, the rest unchanged.
    const { order, warnings } = mapOk(sourceOrder({ money: money({ totalCents: 1460 }) }));
    expect(order).toMatchObject({
      totalMoney: 14.6,
      shippingMoney: 5,
      taxMoney: 1.6,
      subtotalMoney: 8,
    });
    expect(order.lineItems[0]).toMatchObject({ price: 10, quantity: 2 });
    expect(warnings).toEqual([expect.stringContaining("differs from Shopify's subtotal")]);
  });

  it("takes a custom refund larger than the goods off the shipping, then the tax, never below 0", () => {
    const sent = (totalCents: number) => {
      const { order, warnings } = mapOk(sourceOrder({ money: money({ totalCents }) }));
      expect(warnings).toEqual([expect.stringContaining("a refund of a custom amount")]);
      const { subtotalMoney, shippingMoney, taxMoney, totalMoney } = order;
      return { subtotalMoney, shippingMoney, taxMoney, totalMoney };
    };
    // Shipping 5.00 and tax 1.60 stay in Shopify's figures; the total is lower than both.
    expect(sent(600)).toEqual({
      subtotalMoney: 0,
      shippingMoney: 4.4,
      taxMoney: 1.6,
      totalMoney: 6,
    });
    expect(sent(100)).toEqual({ subtotalMoney: 0, shippingMoney: 0, taxMoney: 1, totalMoney: 1 });
    // Refunded in full as a custom amount.
    expect(sent(0)).toEqual({ subtotalMoney: 0, shippingMoney: 0, taxMoney: 0, totalMoney: 0 });
  });

  it("takes it the same way in a tax-inclusive shop, shipping net of its own tax", () => {
    const order = sourceOrder({
      taxesIncluded: true,
      money: money({ shippingCents: 605, shippingTaxCents: 105, taxCents: 500, totalCents: 700 }),
    });
    expect(mapOk(order).order).toMatchObject({
      subtotalMoney: 0,
      shippingMoney: 2,
      taxMoney: 5,
      totalMoney: 7,
    });
  });

  it("refuses a negative total or tax, naming the field", () => {
    expect(mapErrors(sourceOrder({ money: money({ totalCents: -100 }) }))).toEqual(["totalMoney"]);
    expect(mapErrors(sourceOrder({ money: money({ taxCents: -1 }) }))).toEqual(["taxMoney"]);
  });

  it("refuses a tax-inclusive shipping price below its own tax, naming shippingMoney", () => {
    const order = sourceOrder({
      taxesIncluded: true,
      money: money({ shippingCents: 100, shippingTaxCents: 150 }),
    });
    expect(mapErrors(order)).toEqual(["shippingMoney"]);
  });

  it("warns, without refusing, when Shopify's own subtotal disagrees with the derived one", () => {
    const { order, warnings } = mapOk(sourceOrder({ money: money({ subtotalCents: 1990 }) }));
    expect(order.subtotalMoney).toBe(20);
    expect(warnings).toEqual([expect.stringContaining("differs from Shopify's subtotal")]);
  });

  it("sends the customer's currency and the presentment ÷ shop rate to 6 decimals", () => {
    const { order } = mapOk(
      sourceOrder({ presentmentCurrency: "CAD", presentmentTotalCents: 3644 }),
    );
    // 36.44 / 26.60 = 1.36992481…
    expect(order).toMatchObject({ customerCurrencyCode: "CAD", currencyConversionRate: 1.369925 });
  });

  it("sends no rate when the customer paid in the shop's currency", () => {
    const { order } = mapOk(sourceOrder({ presentmentTotalCents: 2700 }));
    expect(order).not.toHaveProperty("currencyConversionRate");
  });

  it("sends no rate when either total is zero or the presentment total is unknown", () => {
    const zero = sourceOrder({
      presentmentCurrency: "CAD",
      presentmentTotalCents: 0,
    });
    const unknown = sourceOrder({ presentmentCurrency: "CAD", presentmentTotalCents: null });
    const free = sourceOrder({
      presentmentCurrency: "CAD",
      presentmentTotalCents: 100,
      money: money({ subtotalCents: 0, shippingCents: 0, taxCents: 0, totalCents: 0 }),
      lineItems: [sourceLine({ unitPriceCents: 0, taxCents: 0 })],
    });
    for (const order of [zero, unknown, free]) {
      expect(mapOk(order).order).not.toHaveProperty("currencyConversionRate");
    }
  });
});
