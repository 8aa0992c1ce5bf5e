import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FulfillmentWrite, OrderCreate, toCents } from "../../src/provider/schemas.ts";
import { mapOrder } from "../../src/sync/index.ts";
import { arbitrarySettings, sourceOrderArbitrary } from "./arbitraries.ts";

const twoDecimals = (value: number) => Math.round(value * 100) / 100 === value;

describe("mapOrder (properties)", () => {
  it("either refuses an order with named errors or returns a body the provider accepts, total = shipping + subtotal + tax to the cent", () => {
    fc.assert(
      fc.property(sourceOrderArbitrary({ sendable: false }), (source) => {
        const result = mapOrder(source, arbitrarySettings(false));
        if (!result.ok) {
          expect(result.errors.length).toBeGreaterThan(0);
          for (const e of result.errors) {
            expect(e.field).not.toBe("");
            expect(e.message).not.toBe("");
          }
          return;
        }
        const { order, fulfillments } = result;
        expect(() => OrderCreate.parse(order)).not.toThrow();
        for (const f of fulfillments) expect(() => FulfillmentWrite.parse(f)).not.toThrow();
        expect(toCents(order.totalMoney)).toBe(
          toCents(order.shippingMoney) + toCents(order.subtotalMoney) + toCents(order.taxMoney),
        );
        expect(toCents(order.totalMoney)).toBe(source.money.totalCents);
        // Shopify's tax, unless a custom refund left the total below it (then all of the total).
        expect(toCents(order.taxMoney)).toBe(
          Math.min(source.money.taxCents, source.money.totalCents),
        );
        expect(toCents(order.subtotalMoney)).toBeGreaterThanOrEqual(0);
        const amounts = [
          order.totalMoney,
          order.shippingMoney,
          order.subtotalMoney,
          order.taxMoney,
          ...order.lineItems.flatMap((l) => [l.price, l.tax]),
        ];
        for (const amount of amounts) expect(twoDecimals(amount)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("sends every order that has what the provider needs, with the subtotal net of tax plus tips and duties", () => {
    fc.assert(
      fc.property(sourceOrderArbitrary({ sendable: true }), (source) => {
        const result = mapOrder(source, arbitrarySettings(true));
        if (!result.ok) expect.fail(JSON.stringify(result.errors));
        const { money, taxesIncluded } = source;
        const shipping = taxesIncluded
          ? money.shippingCents - money.shippingTaxCents
          : money.shippingCents;
        expect(toCents(result.order.shippingMoney)).toBe(shipping);
        expect(toCents(result.order.subtotalMoney)).toBe(
          money.totalCents - shipping - money.taxCents,
        );
        // Consistent Shopify figures agree with the derived subtotal: no cross-check warning.
        expect(result.warnings.filter((w) => w.startsWith("subtotalMoney"))).toEqual([]);
        const live = source.lineItems.filter((l) => l.currentQuantity > 0);
        expect(result.order.lineItems.map((l) => l.sourceLineItemId)).toEqual(
          live.map((l) => l.id),
        );
        const shipped = source.fulfillments.filter(
          (f) => f.status === "success" || f.status === "cancelled",
        );
        expect(result.fulfillments.map((f) => f.sourceFulfillmentId)).toEqual(
          shipped.map((f) => f.id),
        );
      }),
      { numRuns: 300 },
    );
  });

  it("maps the same order to the same result every time, and never puts an email or phone in a warning", () => {
    fc.assert(
      fc.property(sourceOrderArbitrary({ sendable: false }), (source) => {
        const result = mapOrder(source, arbitrarySettings(false));
        expect(mapOrder(structuredClone(source), arbitrarySettings(false))).toEqual(result);
        if (!result.ok) return;
        const contacts = [
          source.email,
          source.phone,
          source.customer?.email,
          source.customer?.phone,
          source.billingAddress?.phone,
          source.shippingAddress?.phone,
        ].filter((c): c is string => !!c && c.length > 3);
        for (const warning of result.warnings) {
          for (const contact of contacts) expect(warning).not.toContain(contact);
        }
      }),
    );
  });
});
