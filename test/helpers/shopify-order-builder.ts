/**
 * Builds REST-shaped Shopify order and fulfillment webhook bodies (as Shopify sends them: money
 * as decimal strings in *_set objects, IDs as integers) from a small model, so lifecycle tests
 * can evolve an order and send each state as a real signed webhook.
 */

export interface ModelLine {
  id: number;
  variantId: number;
  sku: string | null;
  title: string;
  /** Unit price in cents. */
  price: number;
  quantity: number;
  currentQuantity: number;
}

export interface ModelFulfillment {
  id: number;
  status: "success" | "cancelled";
  trackingNumber: string | null;
  shipmentStatus: string | null;
  lineIds: number[];
  createdAt: string;
  updatedAt: string;
}

export interface ModelOrder {
  id: number;
  number: number;
  email: string | null;
  createdAt: string;
  updatedAt: string;
  cancelledAt: string | null;
  note: string | null;
  shippingCents: number;
  /** Tax rate in basis points applied per line (exclusive of price). */
  taxBps: number;
  lines: ModelLine[];
  fulfillments: ModelFulfillment[];
  locationId: number;
}

const money = (cents: number) => (cents / 100).toFixed(2);
const set = (cents: number, currency = "USD") => ({
  shop_money: { amount: money(cents), currency_code: currency },
  presentment_money: { amount: money(cents), currency_code: currency },
});

export function lineTaxCents(
  line: ModelLine,
  taxBps: number,
  quantity = line.currentQuantity,
): number {
  return Math.round((line.price * quantity * taxBps) / 10_000);
}

export function orderTotals(order: ModelOrder) {
  const subtotal = order.lines.reduce((sum, l) => sum + l.price * l.currentQuantity, 0);
  const tax = order.lines.reduce((sum, l) => sum + lineTaxCents(l, order.taxBps), 0);
  return {
    subtotal,
    tax,
    shipping: order.shippingCents,
    total: subtotal + tax + order.shippingCents,
  };
}

const address = {
  first_name: "Grace",
  last_name: "Hopper",
  name: "Grace Hopper",
  company: null,
  address1: "10 Navy Way",
  address2: null,
  city: "Arlington",
  province: "Virginia",
  province_code: "VA",
  zip: "22201",
  country: "United States",
  country_code: "US",
  phone: "(703) 555-0100",
  latitude: 38.88,
  longitude: -77.1,
};

export function fulfillmentPayload(order: ModelOrder, f: ModelFulfillment) {
  return {
    id: f.id,
    admin_graphql_api_id: `gid://shopify/Fulfillment/${f.id}`,
    order_id: order.id,
    location_id: order.locationId,
    status: f.status,
    shipment_status: f.shipmentStatus,
    tracking_company: f.trackingNumber ? "UPS" : null,
    tracking_number: f.trackingNumber,
    tracking_numbers: f.trackingNumber ? [f.trackingNumber] : [],
    tracking_url: f.trackingNumber
      ? `https://www.ups.com/track?tracknum=${f.trackingNumber}`
      : null,
    tracking_urls: f.trackingNumber
      ? [`https://www.ups.com/track?tracknum=${f.trackingNumber}`]
      : [],
    name: `#${order.number}.${order.fulfillments.indexOf(f) + 1}`,
    service: "manual",
    created_at: f.createdAt,
    updated_at: f.updatedAt,
    line_items: order.lines
      .filter((l) => f.lineIds.includes(l.id))
      .map((l) => ({ id: l.id, quantity: l.currentQuantity, variant_id: l.variantId, sku: l.sku })),
  };
}

export function orderPayload(order: ModelOrder) {
  const totals = orderTotals(order);
  return {
    id: order.id,
    admin_graphql_api_id: `gid://shopify/Order/${order.id}`,
    name: `#${order.number}`,
    order_number: order.number,
    number: order.number - 1000,
    email: order.email,
    contact_email: order.email,
    phone: null,
    created_at: order.createdAt,
    updated_at: order.updatedAt,
    processed_at: order.createdAt,
    cancelled_at: order.cancelledAt,
    cancel_reason: order.cancelledAt ? "customer" : null,
    closed_at: null,
    currency: "USD",
    presentment_currency: "USD",
    taxes_included: false,
    test: false,
    note: order.note,
    source_name: "web",
    financial_status: "paid",
    fulfillment_status: null,
    total_weight: 500,
    subtotal_price: money(totals.subtotal),
    total_tax: money(totals.tax),
    total_price: money(totals.total),
    current_subtotal_price: money(totals.subtotal),
    current_total_tax: money(totals.tax),
    current_total_price: money(totals.total),
    total_discounts: "0.00",
    current_total_discounts: "0.00",
    subtotal_price_set: set(totals.subtotal),
    total_tax_set: set(totals.tax),
    total_price_set: set(totals.total),
    current_subtotal_price_set: set(totals.subtotal),
    current_total_tax_set: set(totals.tax),
    current_total_price_set: set(totals.total),
    total_discounts_set: set(0),
    current_total_discounts_set: set(0),
    total_shipping_price_set: set(order.shippingCents),
    current_shipping_price_set: set(order.shippingCents),
    total_tip_received: "0.00",
    current_total_duties_set: null,
    customer: order.email
      ? {
          id: 900_000 + order.id,
          email: order.email,
          first_name: "Grace",
          last_name: "Hopper",
          phone: null,
        }
      : null,
    // Copies: a test that makes a payload hostile edits its addresses, and the next payload (in
    // this file or the next one the worker runs) must not see that edit.
    billing_address: { ...address },
    shipping_address: { ...address },
    shipping_lines: [
      {
        id: 1,
        title: "Standard",
        price: money(order.shippingCents),
        price_set: set(order.shippingCents),
      },
    ],
    line_items: order.lines.map((l) => ({
      id: l.id,
      admin_graphql_api_id: `gid://shopify/LineItem/${l.id}`,
      product_id: 7_000_000 + l.variantId,
      variant_id: l.variantId,
      title: l.title,
      variant_title: null,
      name: l.title,
      sku: l.sku,
      vendor: "Acme",
      quantity: l.quantity,
      current_quantity: l.currentQuantity,
      fulfillable_quantity: l.currentQuantity,
      price: money(l.price),
      price_set: set(l.price),
      total_discount: "0.00",
      total_discount_set: set(0),
      discount_allocations: [],
      // Like Shopify's, a line's tax lines are for the quantity ordered; edits change only the
      // current_* totals and current_quantity.
      tax_lines: [
        {
          title: "State tax",
          rate: order.taxBps / 10_000,
          price: money(lineTaxCents(l, order.taxBps, l.quantity)),
          price_set: set(lineTaxCents(l, order.taxBps, l.quantity)),
        },
      ],
      requires_shipping: true,
      gift_card: false,
      grams: 100,
      taxable: true,
    })),
    fulfillments: order.fulfillments.map((f) => fulfillmentPayload(order, f)),
    refunds: [],
  };
}
