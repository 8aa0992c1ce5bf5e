import { expect } from "vitest";
import type { ProviderStoreId } from "../../src/provider/schemas.ts";
import {
  type MapResult,
  mapOrder,
  type PlanInput,
  type ShopDomain,
  type ShopifyFulfillmentId,
  type ShopifyLineItemId,
  type ShopifyLocationId,
  type ShopifyOrderId,
  type ShopSettings,
  type SourceAddress,
  type SourceFulfillment,
  type SourceLineItem,
  type SourceOrder,
} from "../../src/sync/index.ts";

/**
 * Small valid SourceOrders for the mapping and planning tests; each test overrides what it is
 * about. The default order: one line of 2 × 10.00 with 1.60 tax, 5.00 shipping, total 26.60,
 * in USD, shipped to and billed at a US address.
 */
export function sourceOrder(overrides: Partial<SourceOrder> = {}): SourceOrder {
  return {
    shop: "demo-shop.myshopify.com" as ShopDomain,
    id: "5001" as ShopifyOrderId,
    name: "#1001",
    orderNumber: "1001",
    createdAt: "2026-11-01T10:00:00-05:00",
    updatedAt: "2026-11-01T10:05:00-05:00",
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
    lineItems: [sourceLine()],
    fulfillments: [],
    shippingTitle: "Standard",
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

/** Location 3001 is mapped to provider location 7; there is no default location. */
export function shopSettings(overrides: Partial<ShopSettings> = {}): ShopSettings {
  return {
    storeId: 1001 as ProviderStoreId,
    currency: "USD",
    protectionVariantIds: [],
    locationMap: { "3001": 7 },
    defaultLocationId: null,
    ...overrides,
  };
}

export type Mapped = Extract<MapResult, { ok: true }>;

/** Maps an order the test expects to be sendable; fails the test with the errors otherwise. */
export function mapOk(order: SourceOrder, settings: ShopSettings = shopSettings()): Mapped {
  const result = mapOrder(order, settings);
  if (!result.ok) expect.fail(`expected a sendable order, got ${JSON.stringify(result.errors)}`);
  return result;
}

/** The fields of the errors of an order the test expects to be refused. */
export function mapErrors(order: SourceOrder, settings: ShopSettings = shopSettings()): string[] {
  const result = mapOrder(order, settings);
  if (result.ok) expect.fail("expected the order to be refused, but it mapped");
  return result.errors.map((e) => e.field);
}

/** The planner's input for a mapped order, canceled when the source order is. */
export function planInput(order: SourceOrder, settings: ShopSettings = shopSettings()): PlanInput {
  const mapped = mapOk(order, settings);
  return {
    order: mapped.order,
    fulfillments: mapped.fulfillments,
    canceled: order.cancelledAt ? { reason: order.cancelReason, at: order.cancelledAt } : null,
  };
}
