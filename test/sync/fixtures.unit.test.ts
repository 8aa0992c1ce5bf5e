import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ProviderStoreId } from "../../src/provider/schemas.ts";
import { normalizeWebhook, parseShopifyJson } from "../../src/shopify/index.ts";
import { guestId, mapOrder, type ShopSettings, soldWithoutShipping } from "../../src/sync/index.ts";
import type { ShopDomain, SourceOrder } from "../../src/sync/source-order.ts";

/**
 * Realistic REST webhook bodies (the base is examples/orders-create.json, in the exact shape
 * Shopify sends), each varied the way a real shop produces it, with the provider body the
 * connector must send for it. The expected values are worked out by hand in the comments.
 */
// biome-ignore lint/suspicious/noExplicitAny: fixtures are edited as free-form Shopify JSON.
type Json = Record<string, any>;
const base = (): Json =>
  JSON.parse(readFileSync(new URL("../../examples/orders-create.json", import.meta.url), "utf8"));
const set = (
  amount: string,
  currency = "USD",
  presentment = amount,
  presentmentCurrency = currency,
) => ({
  shop_money: { amount, currency_code: currency },
  presentment_money: { amount: presentment, currency_code: presentmentCurrency },
});
const settings = (overrides: Partial<ShopSettings> = {}): ShopSettings => ({
  storeId: 1001 as ProviderStoreId,
  currency: "USD",
  protectionVariantIds: [],
  locationMap: { "48752903": 7 },
  defaultLocationId: null,
  ...overrides,
});
const shop = "demo-shop.myshopify.com" as ShopDomain;

function map(body: Json, s = settings()) {
  const event = normalizeWebhook("orders/create", shop, parseShopifyJson(JSON.stringify(body)));
  if (event.kind !== "order") throw new Error("not an order");
  const result = mapOrder(event.order, s);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.order;
}

describe("Shopify order fixtures → provider order bodies", () => {
  it("maps a plain US order (examples/orders-create.json)", () => {
    // 2 × 28.00 + 1 × 14.50 = 70.50; tax 7.25% per line: 4.06 + 1.05 = 5.11; shipping 7.99.
    expect(map(base())).toEqual({
      storeId: 1001,
      sourceOrderId: "5906323456123",
      orderNumber: "1001",
      orderName: "#1001",
      isShippingProtected: false,
      customerCurrencyCode: "USD",
      customer: {
        sourceCustomerId: "5906324356123",
        firstName: "Grace",
        lastName: "Hopper",
        email: "grace@example.com",
        phone: "+17035550100",
      },
      lineItems: [
        {
          sourceLineItemId: "14512345678001",
          productId: "45123463789012",
          variantId: "45123456789012",
          name: "Organic tee",
          quantity: 2,
          sku: "TEE-BLK-M",
          tax: 4.06,
          price: 28,
          vendor: "Acme",
        },
        {
          sourceLineItemId: "14512345678002",
          productId: "45123463789099",
          variantId: "45123456789099",
          name: "Enamel mug",
          quantity: 1,
          sku: "MUG-01",
          tax: 1.05,
          price: 14.5,
          vendor: "Acme",
        },
      ],
      shippingMoney: 7.99,
      subtotalMoney: 70.5,
      taxMoney: 5.11,
      totalMoney: 83.6,
      billingAddress: {
        name: "Grace Hopper",
        firstName: "Grace",
        lastName: "Hopper",
        line1: "10 Navy Way",
        city: "Arlington",
        stateOrProvinceCode: "VA",
        postalCode: "22201",
        countryCode: "US",
        latitude: 38.88,
        longitude: -77.1,
      },
      shippingAddress: {
        name: "Grace Hopper",
        firstName: "Grace",
        lastName: "Hopper",
        line1: "10 Navy Way",
        city: "Arlington",
        stateOrProvinceCode: "VA",
        postalCode: "22201",
        countryCode: "US",
        latitude: 38.88,
        longitude: -77.1,
      },
      sourceCreatedOn: "2026-11-20T10:15:00-05:00",
      sourceUpdatedOn: "2026-11-20T10:15:03-05:00",
      grams: 500,
      shippingTitle: "Standard",
      notes: "Leave at the back door",
      channel: "web",
    });
  });

  it("maps a tax-inclusive EU order with all three amounts net of VAT", () => {
    // 2 × €24.20 incl. 21% VAT: line VAT 8.40; shipping €4.84 incl. VAT 0.84; total 53.24.
    const body = base();
    Object.assign(body, {
      currency: "EUR",
      presentment_current: "EUR",
      presentment_currency: "EUR",
      taxes_included: true,
      current_subtotal_price_set: set("48.40", "EUR"),
      current_total_tax_set: set("9.24", "EUR"),
      current_total_price_set: set("53.24", "EUR"),
      current_shipping_price_set: set("4.84", "EUR"),
      shipping_lines: [
        {
          id: 1,
          title: "DHL Paket",
          price: "4.84",
          price_set: set("4.84", "EUR"),
          tax_lines: [{ title: "MwSt", rate: 0.21, price: "0.84", price_set: set("0.84", "EUR") }],
        },
      ],
      billing_address: {
        ...body.billing_address,
        country_code: "DE",
        province_code: null,
        province: null,
        zip: "10115",
        city: "Berlin",
        address1: "Invalidenstraße 1",
        phone: null,
      },
      shipping_address: {
        ...body.shipping_address,
        country_code: "DE",
        province_code: null,
        province: null,
        zip: "10115",
        city: "Berlin",
        address1: "Invalidenstraße 1",
        phone: null,
      },
    });
    body.line_items = [
      {
        ...body.line_items[0],
        price: "24.20",
        price_set: set("24.20", "EUR"),
        tax_lines: [{ title: "MwSt", rate: 0.21, price: "8.40", price_set: set("8.40", "EUR") }],
      },
    ];
    const order = map(body, settings({ currency: "EUR" }));
    expect(order).toMatchObject({
      shippingMoney: 4,
      taxMoney: 9.24,
      subtotalMoney: 40,
      totalMoney: 53.24,
      customerCurrencyCode: "EUR",
    });
    expect(order.lineItems[0]).toMatchObject({ price: 24.2, tax: 8.4, quantity: 2 });
    // Germany has no province code: the country code stands in.
    expect(order.shippingAddress).toMatchObject({
      stateOrProvinceCode: "DE",
      postalCode: "10115",
      countryCode: "DE",
    });
    expect(order.customer.phone).toBeUndefined();
  });

  it("maps line-level and order-level discounts into the unit price", () => {
    // Tee 2 × 28.00 with a 10% line discount (5.60) and 4.00 of a 5.00 order discount; mug
    // 14.50 with the other 1.00. Subtotal after discounts 70.50 − 10.60 = 59.90.
    const body = base();
    body.line_items[0].discount_allocations = [
      { amount: "5.60", amount_set: set("5.60"), discount_application_index: 0 },
      { amount: "4.00", amount_set: set("4.00"), discount_application_index: 1 },
    ];
    body.line_items[1].discount_allocations = [
      { amount: "1.00", amount_set: set("1.00"), discount_application_index: 1 },
    ];
    Object.assign(body, {
      current_subtotal_price_set: set("59.90"),
      current_total_discounts_set: set("10.60"),
      current_total_tax_set: set("4.34"),
      current_total_price_set: set("72.23"),
    });
    body.line_items[0].tax_lines[0].price_set = set("3.39");
    body.line_items[1].tax_lines[0].price_set = set("0.95");
    const order = map(body);
    // Tee: (56.00 − 9.60) / 2 = 23.20 per unit; mug: 14.50 − 1.00 = 13.50.
    expect(order.lineItems.map((l) => [l.price, l.tax])).toEqual([
      [23.2, 3.39],
      [13.5, 0.95],
    ]);
    expect(order).toMatchObject({
      subtotalMoney: 59.9,
      taxMoney: 4.34,
      shippingMoney: 7.99,
      totalMoney: 72.23,
    });
  });

  it("keeps shop money and sends the customer's currency and rate for a presentment currency", () => {
    // The customer paid CAD 114.53 for USD 83.60: rate 114.53 / 83.60 = 1.369976.
    const body = base();
    Object.assign(body, {
      presentment_currency: "CAD",
      current_total_price_set: set("83.60", "USD", "114.53", "CAD"),
    });
    const order = map(body);
    expect(order).toMatchObject({
      totalMoney: 83.6,
      customerCurrencyCode: "CAD",
      currencyConversionRate: 1.369976,
    });
  });

  it("gives a guest checkout a stable customer id from the email", () => {
    const body = { ...base(), customer: null, email: "Walk.In@Example.com" };
    const order = map(body);
    expect(order.customer).toMatchObject({
      sourceCustomerId: guestId("walk.in@example.com"),
      email: "Walk.In@Example.com",
      firstName: "Grace",
    });
    expect(map({ ...body, id: 5906323456999 }).customer.sourceCustomerId).toBe(
      order.customer.sourceCustomerId,
    );
  });

  it("uses the billing address for local pickup without a shipping address", () => {
    const body = {
      ...base(),
      shipping_address: null,
      shipping_lines: [{ id: 2, title: "Pickup at store", price: "0.00", price_set: set("0.00") }],
    };
    Object.assign(body, {
      current_shipping_price_set: set("0.00"),
      current_total_price_set: set("75.61"),
    });
    const order = map(body);
    expect(order.shippingAddress).toEqual(order.billingAddress);
    expect(order).toMatchObject({
      shippingMoney: 0,
      totalMoney: 75.61,
      shippingTitle: "Pickup at store",
    });
  });

  it("tells a point-of-sale sale, which ships nothing, from orders that ship or withhold an address", () => {
    const normalized = (body: Json) => {
      const event = normalizeWebhook("orders/create", shop, parseShopifyJson(JSON.stringify(body)));
      if (event.kind !== "order") throw new Error("not an order");
      return event.order;
    };
    // A walk-in sale at the counter: no customer, no address keys at all, no shipping line.
    const pos: Json = { ...base(), source_name: "pos", location_id: 48752903, customer: null };
    delete pos.shipping_address;
    delete pos.billing_address;
    pos.shipping_lines = [];
    expect(soldWithoutShipping(normalized(pos))).toBe(true);
    // A snapshot stored before shipping lines were recorded may have had one: not kept out.
    const { hasShippingLine: _, ...stored } = normalized(pos);
    expect(soldWithoutShipping(stored as SourceOrder)).toBe(false);
    // The same with the addresses sent as null.
    const nulls = { ...pos, shipping_address: null, billing_address: null };
    expect(soldWithoutShipping(normalized(nulls))).toBe(true);
    // Something ships (delivery or local pickup): an address is missing, not unneeded.
    const pickup = { ...nulls, shipping_lines: base().shipping_lines };
    expect(soldWithoutShipping(normalized(pickup))).toBe(false);
    // A customer known at the counter by a country only, or an address without a street:
    // nothing to ship to and nothing ships, like the walk-in sale.
    const countryOnly = {
      ...pos,
      customer: base().customer,
      billing_address: {
        ...Object.fromEntries(Object.keys(base().billing_address).map((k) => [k, null])),
        country: "United States",
        country_code: "US",
      },
    };
    expect(soldWithoutShipping(normalized(countryOnly))).toBe(true);
    const noStreet = {
      ...pos,
      customer: base().customer,
      billing_address: { ...base().billing_address, address1: null, address2: null },
    };
    expect(soldWithoutShipping(normalized(noStreet))).toBe(true);
    // The same with a shipping line: something ships, so the address is missing, not unneeded.
    const shipsNoStreet = { ...noStreet, shipping_lines: base().shipping_lines };
    expect(soldWithoutShipping(normalized(shipsNoStreet))).toBe(false);
    // Addresses whose fields Shopify withheld (protected customer data: no name, email, phone
    // or street anywhere) are the app's access to fix, not a sale that ships nothing.
    const withheld = {
      ...pos,
      email: null,
      contact_email: null,
      phone: null,
      customer: { id: 1, email: null, first_name: null, last_name: null, phone: null },
      billing_address: { ...base().billing_address, address1: null, name: null, phone: null },
    };
    expect(soldWithoutShipping(normalized(withheld))).toBe(false);
    // A usable billing address and nothing shipped (digital goods): sent, shipped to it.
    const digital = { ...pos, customer: base().customer, billing_address: base().billing_address };
    expect(soldWithoutShipping(normalized(digital))).toBe(false);
    expect(soldWithoutShipping(normalized(base()))).toBe(false);
  });

  it("marks an order with the protection variant as protected", () => {
    const body = base();
    body.line_items.push({
      ...body.line_items[1],
      id: 14512345678003,
      variant_id: 44000000000001,
      product_id: 8000000001,
      title: "Shipping protection",
      name: "Shipping protection",
      sku: "ROUTEINS",
      price: "2.25",
      price_set: set("2.25"),
      tax_lines: [],
    });
    const order = map(body, settings({ protectionVariantIds: ["44000000000001"] }));
    expect(order.isShippingProtected).toBe(true);
    expect(order.lineItems.at(-1)).toMatchObject({
      variantId: "44000000000001",
      price: 2.25,
      tax: 0,
    });
  });

  it("sends a free line at price 0 and a line without SKU with a stable fallback SKU", () => {
    const body = base();
    body.line_items[1] = {
      ...body.line_items[1],
      price: "0.00",
      price_set: set("0.00"),
      sku: null,
      tax_lines: [],
    };
    const order = map(body);
    expect(order.lineItems[1]).toMatchObject({
      price: 0,
      tax: 0,
      sku: "shopify-variant-45123456789099",
    });
  });

  it("turns local phone formats into E.164 with the address country, and leaves out an unusable one", () => {
    const us = base();
    us.customer.phone = null;
    us.billing_address.phone = "(415) 555-0123";
    expect(map(us).customer.phone).toBe("+14155550123");

    const fr = base();
    fr.customer.phone = null;
    fr.billing_address = {
      ...fr.billing_address,
      phone: "06 12 34 56 78",
      country_code: "FR",
      province_code: null,
      zip: "75001",
      city: "Paris",
    };
    fr.shipping_address = fr.billing_address;
    expect(map(fr).customer.phone).toBe("+33612345678");

    const bad = base();
    bad.customer.phone = null;
    bad.billing_address.phone = "555-555-SHIP";
    bad.shipping_address.phone = "555-555-SHIP";
    const order = map(bad);
    expect(order.customer.phone).toBeUndefined();
    expect(order.customer.email).toBe("grace@example.com");
  });

  it("keeps 64-bit IDs beyond 2^53 exact from the raw body to the provider body", () => {
    const raw = readFileSync(new URL("../../examples/orders-create.json", import.meta.url), "utf8")
      .replace('"id": 5906323456123', '"id": 9223372036854775807')
      .replace('"id": 14512345678001', '"id": 9007199254740993');
    const event = normalizeWebhook("orders/create", shop, parseShopifyJson(raw));
    if (event.kind !== "order") throw new Error("not an order");
    const result = mapOrder(event.order, settings());
    expect(result.ok && result.order.sourceOrderId).toBe("9223372036854775807");
    expect(result.ok && result.order.lineItems[0]?.sourceLineItemId).toBe("9007199254740993");
  });

  it("refuses an order in another currency than the provider store's, naming the field", () => {
    const event = normalizeWebhook("orders/create", shop, base());
    if (event.kind !== "order") throw new Error("not an order");
    const result = mapOrder(event.order, settings({ currency: "EUR" }));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]?.field).toBe("currency");
  });
});
