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
} from "../sync/source-order.ts";
import { toCents } from "./money.ts";
import {
  idOf,
  isObject,
  type Json,
  num,
  optionalDate,
  PayloadError,
  requireDate,
  requireId,
  str,
} from "./payload-fields.ts";

/**
 * An Admin GraphQL Order node (selected by ORDER_FIELDS) → SourceOrder, the same model a
 * webhook payload becomes (docs/principles.md, principle 2). Where the two APIs name things differently:
 * gids become decimal IDs, enums (`CUSTOMER`, `SUCCESS`, `IN_TRANSIT`) become the REST lower
 * case, `countryCodeV2` is the country code, `customAttributes` are the line properties and
 * `Fulfillment.displayStatus` carries the carrier's shipment status. Line weights are not in
 * Admin GraphQL's LineItem: `grams` is null here (mapping does not use it).
 */
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const nodes = (connection: unknown): Json[] => (isObject(connection) ? list(connection.nodes) : []);
const lower = (v: unknown) => str(v)?.toLowerCase() ?? null;

function shopMoney(bag: unknown): number | null {
  return isObject(bag) && isObject(bag.shopMoney) ? toCents(bag.shopMoney.amount) : null;
}

const sum = (values: (number | null)[]) => values.reduce<number>((a, b) => a + (b ?? 0), 0);

/** Carrier statuses that displayStatus reports under their REST names. */
const SHIPMENT_STATUSES = new Set([
  "label_printed",
  "label_purchased",
  "attempted_delivery",
  "ready_for_pickup",
  "picked_up",
  "confirmed",
  "in_transit",
  "out_for_delivery",
  "delivered",
  "failure",
]);

export function normalizeGraphqlOrder(shop: ShopDomain, node: Json): SourceOrder {
  const id = requireId(node.legacyResourceId ?? node.id, "id") as ShopifyOrderId;
  const createdAt = requireDate(node.createdAt, "createdAt");
  const updatedAt = requireDate(node.updatedAt ?? node.createdAt, "updatedAt");
  const currency = str(node.currencyCode);
  if (!currency) throw new PayloadError("currencyCode", "the shop currency is required");
  const totalCents = shopMoney(node.currentTotalPriceSet);
  if (totalCents === null)
    throw new PayloadError("currentTotalPriceSet", "the order total is required");
  const total = node.currentTotalPriceSet as Json;
  const customer = isObject(node.customer) ? node.customer : null;
  const weight = node.totalWeight;

  return {
    shop,
    id,
    name: str(node.name) ?? `#${String(node.number ?? id)}`,
    orderNumber: String(node.number ?? id),
    createdAt,
    updatedAt,
    cancelledAt: optionalDate(node.cancelledAt),
    cancelReason: lower(node.cancelReason),
    closedAt: optionalDate(node.closedAt),
    currency,
    presentmentCurrency: str(node.presentmentCurrencyCode) ?? currency,
    email: str(node.email),
    phone: str(node.phone),
    customer: customer
      ? {
          id: idOf(customer.id),
          firstName: str(customer.firstName),
          lastName: str(customer.lastName),
          email: str(customer.email),
          phone: str(customer.phone),
        }
      : null,
    billingAddress: normalizeAddress(node.billingAddress),
    shippingAddress: normalizeAddress(node.shippingAddress),
    taxesIncluded: node.taxesIncluded === true,
    money: {
      subtotalCents: shopMoney(node.currentSubtotalPriceSet) ?? 0,
      shippingCents: shopMoney(node.currentShippingPriceSet) ?? 0,
      shippingTaxCents: sum(
        nodes(node.shippingLines)
          .flatMap((line) => list(line.taxLines))
          .map((t) => shopMoney(t.priceSet)),
      ),
      taxCents: shopMoney(node.currentTotalTaxSet) ?? 0,
      totalCents,
      discountCents: shopMoney(node.currentTotalDiscountsSet) ?? 0,
      tipCents: shopMoney(node.totalTipReceivedSet) ?? 0,
      dutiesCents: shopMoney(node.currentTotalDutiesSet) ?? 0,
    },
    presentmentTotalCents: isObject(total.presentmentMoney)
      ? toCents(total.presentmentMoney.amount)
      : null,
    lineItems: nodes(node.lineItems).map((line, i) => normalizeLine(line, `lineItems.${i}`)),
    fulfillments: list(node.fulfillments).map((f, i) =>
      normalizeFulfillment(f, `fulfillments.${i}`, id),
    ),
    shippingTitle: isObject(node.shippingLine) ? str(node.shippingLine.title) : null,
    hasShippingLine: isObject(node.shippingLine) || nodes(node.shippingLines).length > 0,
    totalWeightGrams:
      typeof weight === "string" || typeof weight === "number" ? Number(weight) : null,
    channel: str(node.sourceName),
    note: str(node.note),
    test: node.test === true,
  };
}

export function normalizeLine(line: Json, field: string): SourceLineItem {
  const title = str(line.title) ?? str(line.name) ?? "Item";
  const variantTitle = str(line.variantTitle);
  const quantity = num(line.quantity) ?? 0;
  return {
    id: requireId(line.id, `${field}.id`) as ShopifyLineItemId,
    productId: isObject(line.product) ? idOf(line.product.id) : null,
    variantId: isObject(line.variant) ? idOf(line.variant.id) : null,
    name: str(line.name) ?? (variantTitle ? `${title} - ${variantTitle}` : title),
    title,
    variantTitle,
    sku: str(line.sku),
    vendor: str(line.vendor),
    quantity,
    currentQuantity: num(line.currentQuantity) ?? quantity,
    unitPriceCents: shopMoney(line.originalUnitPriceSet) ?? 0,
    discountCents: sum(list(line.discountAllocations).map((d) => shopMoney(d.allocatedAmountSet))),
    taxCents: sum(list(line.taxLines).map((t) => shopMoney(t.priceSet))),
    options: list(line.customAttributes)
      .map((a) => ({ name: str(a.key) ?? "", value: str(a.value) ?? "" }))
      .filter((p) => p.name !== "" && p.value !== "" && !p.name.startsWith("_")),
    requiresShipping: line.requiresShipping !== false,
    giftCard: line.isGiftCard === true,
    grams: null,
  };
}

function normalizeFulfillment(raw: Json, field: string, orderId: string): SourceFulfillment {
  const createdAt = requireDate(raw.createdAt, `${field}.createdAt`);
  const tracking = list(raw.trackingInfo);
  const display = lower(raw.displayStatus);
  return {
    id: requireId(raw.id, `${field}.id`) as ShopifyFulfillmentId,
    orderId: orderId as ShopifyOrderId,
    locationId: (isObject(raw.location) ? idOf(raw.location.id) : null) as ShopifyLocationId | null,
    status: lower(raw.status) ?? "success",
    shipmentStatus: display && SHIPMENT_STATUSES.has(display) ? display : null,
    trackingCompany: str(tracking[0]?.company),
    trackingNumbers: tracking.map((t) => str(t.number)).filter((v): v is string => v !== null),
    trackingUrls: tracking.map((t) => str(t.url)).filter((v): v is string => v !== null),
    name: str(raw.name),
    createdAt,
    updatedAt: optionalDate(raw.updatedAt) ?? createdAt,
    lineItems: nodes(raw.fulfillmentLineItems)
      .map((l) => ({
        id: (isObject(l.lineItem) ? idOf(l.lineItem.id) : null) as ShopifyLineItemId,
        quantity: num(l.quantity) ?? 0,
      }))
      .filter((l) => l.id !== null),
  };
}

function normalizeAddress(raw: unknown): SourceAddress | null {
  if (!isObject(raw)) return null;
  return {
    firstName: str(raw.firstName),
    lastName: str(raw.lastName),
    name: str(raw.name),
    company: str(raw.company),
    address1: str(raw.address1),
    address2: str(raw.address2),
    city: str(raw.city),
    provinceCode: str(raw.provinceCode),
    province: str(raw.province),
    zip: str(raw.zip),
    countryCode: str(raw.countryCodeV2)?.toUpperCase() ?? null,
    phone: str(raw.phone),
    latitude: num(raw.latitude),
    longitude: num(raw.longitude),
  };
}
