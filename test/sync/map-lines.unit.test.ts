import { describe, expect, it } from "vitest";
import type { ShopifyLineItemId } from "../../src/sync/index.ts";
import { mapErrors, mapOk, sourceLine, sourceOrder } from "./factories.ts";

const id = (value: string) => value as ShopifyLineItemId;
const linesOf = (...lines: Parameters<typeof sourceLine>[0][]) =>
  mapOk(sourceOrder({ lineItems: lines.map((l) => sourceLine(l)) })).order.lineItems;

describe("mapOrder: line items", () => {
  it("sends one line per Shopify line still in the order, at its current quantity", () => {
    const lines = linesOf(
      { id: id("1"), quantity: 3, currentQuantity: 1, taxCents: 240 },
      { id: id("2"), currentQuantity: 0 },
    );
    expect(lines.map((l) => [l.sourceLineItemId, l.quantity])).toEqual([["1", 1]]);
  });

  it("prices a line per unit after its discounts, rounded half up to the cent", () => {
    // (3 × 9.99 − 5.00) ÷ 3 = 8.3233… → 8.32; (2 × 0.05 − 0.01) ÷ 2 = 0.045 → 0.05.
    const lines = linesOf(
      { id: id("1"), quantity: 3, currentQuantity: 3, unitPriceCents: 999, discountCents: 500 },
      { id: id("2"), quantity: 2, currentQuantity: 2, unitPriceCents: 5, discountCents: 1 },
    );
    expect(lines.map((l) => l.price)).toEqual([8.32, 0.05]);
  });

  it("keeps the per-unit discount of the quantity ordered when part of the line was refunded", () => {
    const [line] = linesOf({
      quantity: 4,
      currentQuantity: 1,
      unitPriceCents: 1000,
      discountCents: 400,
    });
    expect(line).toMatchObject({ quantity: 1, price: 9 });
  });

  it("never sends a negative price when the discount exceeds the price", () => {
    const [line] = linesOf({ unitPriceCents: 500, discountCents: 2000 });
    expect(line?.price).toBe(0);
  });

  it("scales the line's tax to the current quantity", () => {
    // 3.00 of tax for 3 ordered; 1 left → 1.00. 1.00 for 3 ordered; 2 left → 0.666… → 0.67.
    const lines = linesOf(
      { id: id("1"), quantity: 3, currentQuantity: 1, taxCents: 300 },
      { id: id("2"), quantity: 3, currentQuantity: 2, taxCents: 100 },
    );
    expect(lines.map((l) => l.tax)).toEqual([1, 0.67]);
  });

  it("falls back to a SKU from the variant, then from the line, with a warning", () => {
    const order = sourceOrder({
      lineItems: [
        sourceLine({ id: id("1"), sku: null, variantId: "8101" }),
        sourceLine({ id: id("2"), sku: "", variantId: null }),
        sourceLine({ id: id("3"), sku: "  " }),
      ],
    });
    const { order: body, warnings } = mapOk(order);
    expect(body.lineItems.map((l) => l.sku)).toEqual([
      "shopify-variant-8101",
      "shopify-line-2",
      "shopify-variant-8101",
    ]);
    expect(warnings).toHaveLength(3);
  });

  it("sends product, variant, vendor and options only when Shopify has them", () => {
    const [full, bare] = linesOf(
      { id: id("1"), options: [{ name: "Engraving", value: "A.L." }] },
      { id: id("2"), productId: null, variantId: null, vendor: "", options: [] },
    );
    expect(full).toMatchObject({
      productId: "8001",
      variantId: "8101",
      vendor: "Acme",
      options: [{ name: "Engraving", value: "A.L." }],
    });
    expect(Object.keys(bare ?? {}).sort()).toEqual(
      ["name", "price", "quantity", "sku", "sourceLineItemId", "tax"].sort(),
    );
  });

  it("names a line by its title when Shopify gives it no name", () => {
    const [line] = linesOf({ name: "", title: "Gift wrap" });
    expect(line?.name).toBe("Gift wrap");
  });

  it("sends an open order whose lines were all refunded with its lines as ordered, as gone", () => {
    const order = sourceOrder({
      lineItems: [sourceLine({ quantity: 2, currentQuantity: 0, taxCents: 160 })],
    });
    const mapped = mapOk(order);
    expect(mapped.order.lineItems).toMatchObject([{ quantity: 2, tax: 1.6, price: 10 }]);
    expect(mapped.linesGone).toBe(true);
    expect(mapped.warnings).toContain(
      "no line has a quantity left (all removed or refunded): its lines are canceled",
    );
  });

  it("refuses an order without any line item, naming lineItems", () => {
    expect(mapErrors(sourceOrder({ lineItems: [] }))).toEqual(["lineItems"]);
  });

  it("sends a canceled order whose lines were all restocked with its lines as ordered", () => {
    const order = sourceOrder({
      cancelledAt: "2026-11-03T08:00:00Z",
      cancelReason: "customer",
      lineItems: [sourceLine({ quantity: 2, currentQuantity: 0, taxCents: 160 })],
    });
    expect(mapOk(order).order.lineItems).toMatchObject([{ quantity: 2, tax: 1.6, price: 10 }]);
    expect(mapOk(order).linesGone).toBe(true);
  });

  it("sends only the remaining lines of a canceled order that still has some", () => {
    const order = sourceOrder({
      cancelledAt: "2026-11-03T08:00:00Z",
      lineItems: [
        sourceLine({ id: id("1"), currentQuantity: 0 }),
        sourceLine({ id: id("2"), currentQuantity: 1 }),
      ],
    });
    expect(mapOk(order).order.lineItems.map((l) => l.sourceLineItemId)).toEqual(["2"]);
  });
});
