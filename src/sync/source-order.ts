import { z } from "zod";

/**
 * The one normalized source model (docs/principles.md, principle 2). Webhook payloads (REST-shaped JSON)
 * and Admin GraphQL nodes (backfill, resync) are both turned into these types at the edge;
 * mapping and planning never see either raw shape.
 *
 * Conventions:
 * - Shopify IDs are decimal strings (64-bit integers parsed losslessly), branded per kind.
 * - Money is in whole cents of the shop's currency (`shop_money`), integers, never floats.
 *   Presentment (customer currency) totals are kept only to derive the conversion rate.
 * - Date-times are RFC 3339 strings with an offset, as Shopify sends them.
 */

export const ShopDomain = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]*\.myshopify\.com$/, "must be a *.myshopify.com domain")
  .brand<"ShopDomain">();
export type ShopDomain = z.infer<typeof ShopDomain>;

/**
 * A shop domain as a request gives it (a header, a query, a path, a form): a host name is
 * case-insensitive, so `My-Store.myshopify.com` is `my-store.myshopify.com`, and spaces around
 * it are dropped; then it must be a ShopDomain. The one reading of every such value, so that no
 * entry point refuses a shop another one takes.
 */
export const ShopDomainInput = z.string().trim().toLowerCase().pipe(ShopDomain);

/** Shopify IDs are unsigned 64-bit integers. */
const MAX_SHOPIFY_ID = 2n ** 64n - 1n;

/** Whether decimal text is a Shopify ID: 1 to 2^64−1, no sign, no leading zero. */
export function isShopifyId(text: string): boolean {
  return /^[1-9]\d{0,19}$/.test(text) && BigInt(text) <= MAX_SHOPIFY_ID;
}

const numericId = z
  .string()
  .refine(isShopifyId, "must be a Shopify ID (a whole number from 1 to 18446744073709551615)");
export const ShopifyOrderId = numericId.brand<"ShopifyOrderId">();
export type ShopifyOrderId = z.infer<typeof ShopifyOrderId>;
export const ShopifyLineItemId = numericId.brand<"ShopifyLineItemId">();
export type ShopifyLineItemId = z.infer<typeof ShopifyLineItemId>;
export const ShopifyFulfillmentId = numericId.brand<"ShopifyFulfillmentId">();
export type ShopifyFulfillmentId = z.infer<typeof ShopifyFulfillmentId>;
export const ShopifyLocationId = numericId.brand<"ShopifyLocationId">();
export type ShopifyLocationId = z.infer<typeof ShopifyLocationId>;

export interface SourceAddress {
  firstName: string | null;
  lastName: string | null;
  name: string | null;
  company: string | null;
  address1: string | null;
  address2: string | null;
  city: string | null;
  provinceCode: string | null;
  province: string | null;
  zip: string | null;
  countryCode: string | null;
  phone: string | null;
  latitude: number | null;
  longitude: number | null;
}

export interface SourceCustomer {
  id: string | null;
  firstName: string | null;
  lastName: string | null;
  email: string | null;
  phone: string | null;
}

export interface SourceLineItem {
  id: ShopifyLineItemId;
  productId: string | null;
  variantId: string | null;
  /** Customer-facing name, e.g. "T-shirt - Blue / L". */
  name: string;
  title: string;
  variantTitle: string | null;
  sku: string | null;
  vendor: string | null;
  /** Quantity as ordered. */
  quantity: number;
  /** Quantity after edits, refunds and removals; 0 means the line is gone. */
  currentQuantity: number;
  /** Unit price before discounts, shop currency, cents. */
  unitPriceCents: number;
  /** Sum of this line's discount allocations (all units), shop currency, cents. */
  discountCents: number;
  /** Sum of this line's tax lines (all units), shop currency, cents. */
  taxCents: number;
  /** Variant options as name/value pairs when known. */
  options: { name: string; value: string }[];
  requiresShipping: boolean;
  giftCard: boolean;
  grams: number | null;
}

export interface SourceFulfillment {
  id: ShopifyFulfillmentId;
  orderId: ShopifyOrderId;
  locationId: ShopifyLocationId | null;
  /** pending | open | success | cancelled | error | failure */
  status: string;
  /** Carrier status: label_printed, in_transit, out_for_delivery, delivered, failure… or null. */
  shipmentStatus: string | null;
  trackingCompany: string | null;
  trackingNumbers: string[];
  trackingUrls: string[];
  name: string | null;
  createdAt: string;
  updatedAt: string;
  /** Line items shipped in this fulfillment. */
  lineItems: { id: ShopifyLineItemId; quantity: number }[];
}

export interface SourceOrder {
  shop: ShopDomain;
  id: ShopifyOrderId;
  /** "#1001", the customer-facing name with the shop's prefix/suffix. */
  name: string;
  /** 1001 as a string. */
  orderNumber: string;
  createdAt: string;
  /** The version of this snapshot: a newer updatedAt replaces an older one. */
  updatedAt: string;
  cancelledAt: string | null;
  cancelReason: string | null;
  closedAt: string | null;
  /** The shop's currency (money below is in it). */
  currency: string;
  /** The customer's currency. */
  presentmentCurrency: string;
  email: string | null;
  phone: string | null;
  customer: SourceCustomer | null;
  billingAddress: SourceAddress | null;
  shippingAddress: SourceAddress | null;
  taxesIncluded: boolean;
  /** Current (after edits/refunds) figures in shop money, cents. */
  money: {
    subtotalCents: number;
    shippingCents: number;
    /** Tax inside the shipping price (from the shipping lines' tax lines). */
    shippingTaxCents: number;
    taxCents: number;
    totalCents: number;
    discountCents: number;
    tipCents: number;
    dutiesCents: number;
  };
  /** Current total in presentment money, cents; with money.totalCents gives the rate. */
  presentmentTotalCents: number | null;
  lineItems: SourceLineItem[];
  fulfillments: SourceFulfillment[];
  shippingTitle: string | null;
  /**
   * Whether the order has a shipping line (delivery, local pickup): false for a sale handed over
   * at a counter (point of sale), where nothing ships. Snapshots stored before this field was
   * kept lack it: read a missing value as true (see `soldWithoutShipping`).
   */
  hasShippingLine: boolean;
  totalWeightGrams: number | null;
  /** Sales channel name (source_name), e.g. "web", "pos". */
  channel: string | null;
  note: string | null;
  test: boolean;
}
