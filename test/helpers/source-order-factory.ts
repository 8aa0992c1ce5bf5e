import type {
  ShopDomain,
  ShopifyFulfillmentId,
  ShopifyLineItemId,
  ShopifyLocationId,
  ShopifyOrderId,
  SourceAddress,
  SourceFulfillment,
  SourceLineItem,
  SourceOrder,
} from "../../src/sync/source-order.ts";

/** A small valid order; tests override what they are about. */
export function sourceOrder(overrides: Partial<SourceOrder> = {}): SourceOrder {
  const line: SourceLineItem = sourceLine();
  return {
    shop: "demo-shop.myshopify.com" as ShopDomain,
    id: "5001" as ShopifyOrderId,
    name: "#1001",
    orderNumber: "1001",
    createdAt: "2026-11-01T10:00:00-05:00",
    updatedAt: "2026-11-01T10:00:00-05:00",
    cancelledAt: null,
    cancelReason: null,
    closedAt: null,
    currency: "USD",
    presentmentCurrency: "USD",
    email: "ada@example.com",
    phone: null,
    customer: {
      id: "9001",
      firstName: "Ada",
      lastName: "Lovelace",
      email: "ada@example.com",
      phone: null,
    },
    billingAddress: sourceAddress(),
    shippingAddress: sourceAddress(),
    taxesIncluded: false,
    money: {
      subtotalCents: 2000,
      shippingCents: 500,
      shippingTaxCents: 0,
      taxCents: 160,
      totalCents: 2660,
      discountCents: 0,
      tipCents: 0,
      dutiesCents: 0,
    },
    presentmentTotalCents: 2660,
    lineItems: [line],
    fulfillments: [],
    shippingTitle: "Standard",
    hasShippingLine: true,
    totalWeightGrams: 300,
    channel: "web",
    note: null,
    test: false,
    ...overrides,
  };
}

export function sourceLine(overrides: Partial<SourceLineItem> = {}): SourceLineItem {
  return {
    id: "7001" as ShopifyLineItemId,
    productId: "8001",
    variantId: "8101",
    name: "T-shirt - Blue / L",
    title: "T-shirt",
    variantTitle: "Blue / L",
    sku: "TS-BL-L",
    vendor: "Acme",
    quantity: 2,
    currentQuantity: 2,
    unitPriceCents: 1000,
    discountCents: 0,
    taxCents: 160,
    options: [],
    requiresShipping: true,
    giftCard: false,
    grams: 150,
    ...overrides,
  };
}

export function sourceFulfillment(overrides: Partial<SourceFulfillment> = {}): SourceFulfillment {
  return {
    id: "6001" as ShopifyFulfillmentId,
    orderId: "5001" as ShopifyOrderId,
    locationId: "3001" as ShopifyLocationId,
    status: "success",
    shipmentStatus: "in_transit",
    trackingCompany: "UPS",
    trackingNumbers: ["1Z999"],
    trackingUrls: ["https://www.ups.com/track?tracknum=1Z999"],
    name: "#1001.1",
    createdAt: "2026-11-02T09:00:00-05:00",
    updatedAt: "2026-11-02T09:00:00-05:00",
    lineItems: [{ id: "7001" as ShopifyLineItemId, quantity: 2 }],
    ...overrides,
  };
}

export function sourceAddress(overrides: Partial<SourceAddress> = {}): SourceAddress {
  return {
    firstName: "Ada",
    lastName: "Lovelace",
    name: "Ada Lovelace",
    company: null,
    address1: "1 Main St",
    address2: null,
    city: "Springfield",
    provinceCode: "IL",
    province: "Illinois",
    zip: "62701",
    countryCode: "US",
    phone: null,
    latitude: null,
    longitude: null,
    ...overrides,
  };
}
