import fc from "fast-check";
import type {
  ShopifyFulfillmentId,
  ShopifyLineItemId,
  ShopifyLocationId,
  ShopSettings,
  SourceAddress,
  SourceCustomer,
  SourceFulfillment,
  SourceLineItem,
  SourceOrder,
} from "../../src/sync/index.ts";
import { shopSettings, sourceAddress, sourceOrder } from "./factories.ts";

/**
 * fast-check arbitraries of SourceOrders whose money is consistent the way Shopify's is (lines,
 * discounts, tax-inclusive or not, shipping tax, tips, duties), for the mapping and planning
 * properties. `sendable` orders have everything the provider needs; the others also draw absurd
 * totals, unusable contacts and addresses, unmapped locations and a foreign currency.
 */
export interface OrderArbitraryOptions {
  sendable: boolean;
  /** Line IDs are drawn from this pool, so successive versions of an order share lines. */
  lineIds?: string[];
}

const LINE_IDS = ["7001", "7002", "7003", "7004", "7005"];

interface LineDraw {
  id: string;
  quantity: number;
  currentShare: number;
  unitPriceCents: number;
  discountShare: number;
  sku: string | null;
  variantId: string | null;
  vendor: string | null;
  options: { name: string; value: string }[];
}

const lineDraw = (id: string): fc.Arbitrary<LineDraw> =>
  fc.record({
    id: fc.constant(id),
    quantity: fc.integer({ min: 1, max: 5 }),
    currentShare: fc.constantFrom(0, 0.5, 1, 1, 1),
    unitPriceCents: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 50_000 })),
    discountShare: fc.constantFrom(0, 0, 0.1, 0.333, 1),
    sku: fc.constantFrom("SKU-1", "SKU-2", null, ""),
    variantId: fc.constantFrom("8101", "8102", "999", null),
    vendor: fc.constantFrom("Acme", null),
    options: fc.constantFrom([], [{ name: "Size", value: "L" }]),
  });

const money = {
  taxesIncluded: fc.boolean(),
  /** Tax rate in basis points: 0 %, 7.25 %, 20 %, 21 %, or anything up to 27 %. */
  rateBp: fc.oneof(fc.constantFrom(0, 725, 2000, 2100), fc.integer({ min: 0, max: 2700 })),
  shippingCents: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })),
  tipCents: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1_500 })),
  dutiesCents: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1_500 })),
};

/** The tax inside (tax-inclusive) or on top of (tax-exclusive) an amount, rounded to the cent. */
const taxOf = (cents: number, rateBp: number, included: boolean) =>
  Math.round(included ? (cents * rateBp) / (10_000 + rateBp) : (cents * rateBp) / 10_000);

function buildLines(draws: LineDraw[], rateBp: number, included: boolean): SourceLineItem[] {
  return draws.map((d) => {
    const gross = d.unitPriceCents * d.quantity;
    const discountCents = Math.round(gross * d.discountShare);
    return {
      id: d.id as ShopifyLineItemId,
      productId: d.variantId ? `p${d.variantId}` : null,
      variantId: d.variantId,
      name: `Item ${d.id}`,
      title: `Item ${d.id}`,
      variantTitle: null,
      sku: d.sku,
      vendor: d.vendor,
      quantity: d.quantity,
      currentQuantity: Math.round(d.quantity * d.currentShare),
      unitPriceCents: d.unitPriceCents,
      discountCents,
      taxCents: taxOf(gross - discountCents, rateBp, included),
      options: d.options,
      requiresShipping: true,
      giftCard: false,
      grams: 100,
    };
  });
}

/** Shopify's current figures for lines, shipping, tip and duties, as its own arithmetic gives them. */
function shopifyMoney(
  lines: SourceLineItem[],
  m: {
    taxesIncluded: boolean;
    rateBp: number;
    shippingCents: number;
    tipCents: number;
    dutiesCents: number;
  },
): SourceOrder["money"] {
  let subtotalCents = 0;
  let lineTaxCents = 0;
  let discountCents = 0;
  for (const l of lines) {
    const share = l.currentQuantity / l.quantity;
    subtotalCents += Math.round((l.unitPriceCents * l.quantity - l.discountCents) * share);
    lineTaxCents += Math.round(l.taxCents * share);
    discountCents += Math.round(l.discountCents * share);
  }
  const shippingTaxCents = taxOf(m.shippingCents, m.rateBp, m.taxesIncluded);
  const taxCents = lineTaxCents + shippingTaxCents;
  const totalCents =
    subtotalCents + m.shippingCents + m.tipCents + m.dutiesCents + (m.taxesIncluded ? 0 : taxCents);
  return {
    subtotalCents,
    shippingCents: m.shippingCents,
    shippingTaxCents: m.taxesIncluded ? shippingTaxCents : 0,
    taxCents,
    totalCents,
    discountCents,
    tipCents: m.tipCents,
    dutiesCents: m.dutiesCents,
  };
}

const VALID_EMAILS = ["ada@example.com", "Walk.In@Example.com"];
const ANY_EMAILS = [...VALID_EMAILS, "not an email", "a@b", "", null];
const ANY_PHONES = ["+14155550123", "(415) 555-0123", "06 12 34 56 78", "555-555-SHIP", "", null];

const address = (sendable: boolean): fc.Arbitrary<SourceAddress> =>
  fc
    .record({
      place: fc.constantFrom(
        { countryCode: "US", provinceCode: "IL", zip: "62701", city: "Springfield" },
        { countryCode: "DE", provinceCode: null, zip: "10115", city: "Berlin" },
        { countryCode: "FR", provinceCode: "", zip: "75001", city: "Paris" },
        { countryCode: "hk", provinceCode: null, zip: null, city: "Kowloon" },
        ...(sendable ? [] : [{ countryCode: null, provinceCode: null, zip: null, city: null }]),
      ),
      phone: fc.constantFrom(...ANY_PHONES),
      named: fc.boolean(),
      latitude: fc.option(fc.double({ min: -100, max: 100, noNaN: true })),
    })
    .map(({ place, phone, named, latitude }) =>
      sourceAddress({
        ...place,
        province: null,
        phone,
        latitude,
        ...(named ? {} : { firstName: null, lastName: null, name: null }),
      }),
    );

const customer: fc.Arbitrary<SourceCustomer | null> = fc.option(
  fc.record({
    id: fc.constantFrom("9001", null),
    firstName: fc.constantFrom("Ada", null),
    lastName: fc.constantFrom("Lovelace", null),
    email: fc.constantFrom(...ANY_EMAILS),
    phone: fc.constantFrom(...ANY_PHONES),
  }),
);

const fulfillments = (sendable: boolean): fc.Arbitrary<SourceFulfillment[]> =>
  fc
    .uniqueArray(
      fc.record({
        id: fc.constantFrom("6001", "6002", "6003"),
        status: fc.constantFrom("success", "success", "cancelled", "pending", "open"),
        locationId: fc.constantFrom("3001", sendable ? "3001" : "3002", null),
        shipmentStatus: fc.constantFrom("in_transit", "delivered", null),
        trackingUrls: fc.constantFrom([], ["https://track.example/1"], ["javascript:x"]),
      }),
      { maxLength: 3, selector: (f) => f.id },
    )
    .map((list) =>
      list.map((f) => ({
        id: f.id as ShopifyFulfillmentId,
        orderId: "5001" as SourceOrder["id"],
        locationId: f.locationId as ShopifyLocationId | null,
        status: f.status,
        shipmentStatus: f.shipmentStatus,
        trackingCompany: "UPS",
        trackingNumbers: ["1Z999"],
        trackingUrls: [...f.trackingUrls],
        name: null,
        createdAt: "2026-11-02T09:00:00-05:00",
        updatedAt: "2026-11-03T09:00:00-05:00",
        lineItems: [],
      })),
    );

/** One shop order; successive draws with the same options are versions of the same order. */
export function sourceOrderArbitrary(options: OrderArbitraryOptions): fc.Arbitrary<SourceOrder> {
  const { sendable } = options;
  const ids = options.lineIds ?? LINE_IDS;
  return fc
    .record({
      lines: fc
        .shuffledSubarray(ids, { minLength: 1 })
        .chain((picked) => fc.tuple(...picked.map(lineDraw))),
      taxesIncluded: money.taxesIncluded,
      rateBp: money.rateBp,
      shippingCents: money.shippingCents,
      tipCents: money.tipCents,
      dutiesCents: money.dutiesCents,
      absurdTotal: sendable ? fc.constant(null) : fc.option(fc.integer({ min: 0, max: 100_000 })),
      currency: sendable ? fc.constant("USD") : fc.constantFrom("USD", "USD", "USD", "EUR"),
      presentment: fc.constantFrom(["USD", 1], ["CAD", 1.37]) as fc.Arbitrary<[string, number]>,
      customer,
      email: sendable ? fc.constantFrom(...VALID_EMAILS) : fc.constantFrom(...ANY_EMAILS),
      phone: fc.constantFrom(...ANY_PHONES),
      billing: sendable ? address(true) : fc.option(address(false)),
      shipping: fc.option(address(sendable)),
      fulfillments: fulfillments(sendable),
      canceled: fc.boolean(),
      note: fc.constantFrom(null, "gift", ""),
      updatedMinute: fc.integer({ min: 10, max: 59 }),
    })
    .map((d) => {
      const draws =
        sendable && d.lines[0]
          ? [{ ...d.lines[0], currentShare: 1 }, ...d.lines.slice(1)]
          : d.lines;
      const lineItems = buildLines(draws, d.rateBp, d.taxesIncluded);
      const shopMoney = shopifyMoney(lineItems, d);
      if (d.absurdTotal !== null) shopMoney.totalCents = d.absurdTotal;
      const [presentmentCurrency, rate] = d.presentment;
      return sourceOrder({
        updatedAt: `2026-11-01T10:${d.updatedMinute}:00-05:00`,
        cancelledAt: d.canceled ? "2026-11-05T08:00:00Z" : null,
        cancelReason: d.canceled ? "customer" : null,
        currency: d.currency,
        presentmentCurrency,
        presentmentTotalCents: Math.round(shopMoney.totalCents * rate),
        email: d.email,
        phone: d.phone,
        customer: d.customer,
        billingAddress: d.billing,
        shippingAddress: d.shipping,
        taxesIncluded: d.taxesIncluded,
        money: shopMoney,
        lineItems,
        fulfillments: d.fulfillments,
        note: d.note,
      });
    });
}

/** Settings for the arbitrary orders: location 3001 mapped; a default location when sendable. */
export function arbitrarySettings(sendable: boolean): ShopSettings {
  return shopSettings({
    protectionVariantIds: ["999"],
    defaultLocationId: sendable ? 11 : null,
  });
}
