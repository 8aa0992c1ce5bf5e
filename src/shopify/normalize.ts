import type {
  ShopDomain,
  ShopifyFulfillmentId,
  ShopifyLineItemId,
  ShopifyLocationId,
  ShopifyOrderId,
  SourceAddress,
  SourceCustomer,
  SourceFulfillment,
  SourceLineItem,
  SourceOrder,
} from "../sync/source-order.ts";
import { checkLifecycleShape, isLifecycleTopic } from "./lifecycle-payloads.ts";
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
  ShopMismatchError,
  str,
} from "./payload-fields.ts";
import { isOrderTopic, isTopic, normalizeTopic, type OrderTopic, TOPICS } from "./topics.ts";

export type NormalizedEvent =
  | { kind: "order"; topic: OrderTopic; order: SourceOrder }
  | {
      kind: "fulfillment";
      topic: OrderTopic;
      orderId: ShopifyOrderId;
      fulfillment: SourceFulfillment;
    }
  | {
      kind: "order-hint";
      topic: OrderTopic;
      orderId: ShopifyOrderId;
      reason: "edited" | "refund";
      updatedAt: string | null;
    }
  | { kind: "app-uninstalled" }
  | {
      kind: "shop-update";
      currency: string | null;
      timezone: string | null;
      /** The shop resource's `updated_at` (signed, unlike X-Shopify-Triggered-At). */
      updatedAt: string | null;
    }
  | {
      kind: "privacy";
      topic: string;
      customerId: string | null;
      email: string | null;
      orderIds: string[];
    }
  | { kind: "ignored"; topic: string };

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** IDs arrive as numbers, bigints or (losslessly parsed) strings; they leave as decimal strings. */
/** Shop money of a `*_set` object, falling back to the plain decimal field. */
function shopMoney(set: unknown, plain?: unknown): number | null {
  if (isObject(set) && isObject(set.shop_money)) {
    const cents = toCents(set.shop_money.amount);
    if (cents !== null) return cents;
  }
  return plain === undefined ? null : toCents(plain);
}

function presentmentMoney(set: unknown): number | null {
  return isObject(set) && isObject(set.presentment_money)
    ? toCents(set.presentment_money.amount)
    : null;
}

const sum = (values: (number | null)[]) => values.reduce<number>((a, b) => a + (b ?? 0), 0);

/**
 * The shop a lifecycle or compliance body names: the compliance payloads' `shop_domain`, or the
 * Shop resource's `myshopify_domain` (app/uninstalled, shop/update). `domain` is the shop's
 * primary domain, a custom one for most shops, so it counts only when it is a myshopify.com one.
 */
function requireBodyShop(body: Json, shop: ShopDomain): void {
  for (const field of ["shop_domain", "myshopify_domain", "domain"] as const) {
    const named = str(body[field])?.toLowerCase() ?? null;
    if (named === null) continue;
    if (named === shop) return;
    if (field !== "domain" || named.endsWith(".myshopify.com")) {
      throw new ShopMismatchError(field, named);
    }
  }
  throw new ShopMismatchError("shop_domain", null);
}

/**
 * An order body does not name its shop, except through `order_status_url` when that is on the
 * shop's myshopify.com domain: then it must be the header's shop.
 */
function checkOrderShop(body: Json, shop: ShopDomain): void {
  const url = str(body.order_status_url);
  if (!url || !URL.canParse(url)) return;
  const host = new URL(url).hostname.toLowerCase();
  if (host.endsWith(".myshopify.com") && host !== shop) {
    throw new ShopMismatchError("order_status_url", host);
  }
}

export function normalizeWebhook(topic: string, shop: ShopDomain, body: unknown): NormalizedEvent {
  const name = normalizeTopic(topic);
  if (!isTopic(name)) return { kind: "ignored", topic: name };
  if (!isObject(body)) throw new PayloadError("body", "a JSON object is required");
  if (isOrderTopic(name)) return normalizeOrderEvent(name, shop, body);
  // Lifecycle and compliance bodies must have their own topic's shape (TopicMismatchError).
  if (isLifecycleTopic(name)) checkLifecycleShape(name, body);
  switch (TOPICS[name]) {
    case "app-uninstalled":
      requireBodyShop(body, shop);
      return { kind: "app-uninstalled" };
    case "shop-update":
      requireBodyShop(body, shop);
      return {
        kind: "shop-update",
        currency: str(body.currency),
        timezone: str(body.iana_timezone),
        updatedAt: optionalDate(body.updated_at),
      };
    case "privacy":
      requireBodyShop(body, shop);
      return {
        kind: "privacy",
        topic: name,
        customerId: isObject(body.customer) ? idOf(body.customer.id) : null,
        email: isObject(body.customer) ? str(body.customer.email) : null,
        orderIds: [...list(body.orders_to_redact), ...list(body.orders_requested)]
          .map(idOf)
          .filter((id): id is string => id !== null),
      };
  }
}

function normalizeOrderEvent(topic: OrderTopic, shop: ShopDomain, body: Json): NormalizedEvent {
  switch (TOPICS[topic]) {
    case "fulfillment": {
      const fulfillment = normalizeRestFulfillment(body, "");
      return { kind: "fulfillment", topic, orderId: fulfillment.orderId, fulfillment };
    }
    case "order-hint": {
      if (topic === "orders/edited") {
        const edit = isObject(body.order_edit) ? body.order_edit : null;
        if (!edit) throw new PayloadError("order_edit", "an order_edit object is required");
        return {
          kind: "order-hint",
          topic,
          orderId: requireId(edit.order_id, "order_edit.order_id") as ShopifyOrderId,
          reason: "edited",
          updatedAt: optionalDate(edit.committed_at) ?? optionalDate(edit.created_at),
        };
      }
      return {
        kind: "order-hint",
        topic,
        orderId: requireId(body.order_id, "order_id") as ShopifyOrderId,
        reason: "refund",
        updatedAt: optionalDate(body.processed_at) ?? optionalDate(body.created_at),
      };
    }
    case "full-order":
      checkOrderShop(body, shop);
      return { kind: "order", topic, order: normalizeRestOrder(shop, body) };
  }
}

/** A REST-shaped order (webhook payload) → SourceOrder. */
export function normalizeRestOrder(shop: ShopDomain, body: Json): SourceOrder {
  const id = requireId(body.id, "id") as ShopifyOrderId;
  const createdAt = requireDate(body.created_at, "created_at");
  const updatedAt = requireDate(body.updated_at ?? body.created_at, "updated_at");
  const currency = str(body.currency);
  if (!currency) throw new PayloadError("currency", "the shop currency is required");

  const lineItems = list(body.line_items).map((raw, i) =>
    normalizeRestLine(raw, `line_items.${i}`, body),
  );
  const fulfillments = list(body.fulfillments).map((raw, i) =>
    normalizeRestFulfillment(raw, `fulfillments.${i}.`, id),
  );
  const totalCents =
    shopMoney(body.current_total_price_set, body.current_total_price) ??
    shopMoney(body.total_price_set, body.total_price);
  if (totalCents === null)
    throw new PayloadError("current_total_price_set", "the order total is required");
  const shippingLine = isObject(list(body.shipping_lines)[0])
    ? (list(body.shipping_lines)[0] as Json)
    : null;
  const customer = normalizeCustomer(body.customer);

  return {
    shop,
    id,
    name: str(body.name) ?? `#${body.order_number ?? id}`,
    orderNumber: String(body.order_number ?? body.number ?? id),
    createdAt,
    updatedAt,
    cancelledAt: optionalDate(body.cancelled_at),
    cancelReason: str(body.cancel_reason),
    closedAt: optionalDate(body.closed_at),
    currency,
    presentmentCurrency: str(body.presentment_currency) ?? currency,
    email: str(body.email) ?? str(body.contact_email),
    phone: str(body.phone),
    customer,
    billingAddress: normalizeAddress(body.billing_address),
    shippingAddress: normalizeAddress(body.shipping_address),
    taxesIncluded: body.taxes_included === true,
    money: {
      subtotalCents:
        shopMoney(body.current_subtotal_price_set, body.current_subtotal_price) ??
        shopMoney(body.subtotal_price_set, body.subtotal_price) ??
        0,
      shippingCents:
        shopMoney(body.current_shipping_price_set) ?? shopMoney(body.total_shipping_price_set) ?? 0,
      shippingTaxCents: sum(
        list(body.shipping_lines)
          .filter(isObject)
          .flatMap((line) => list(line.tax_lines))
          .map((t) => (isObject(t) ? shopMoney(t.price_set, t.price) : null)),
      ),
      taxCents:
        shopMoney(body.current_total_tax_set, body.current_total_tax) ??
        shopMoney(body.total_tax_set, body.total_tax) ??
        0,
      totalCents,
      discountCents:
        shopMoney(body.current_total_discounts_set, body.current_total_discounts) ??
        shopMoney(body.total_discounts_set, body.total_discounts) ??
        0,
      tipCents: toCents(body.total_tip_received) ?? 0,
      dutiesCents: shopMoney(body.current_total_duties_set) ?? 0,
    },
    presentmentTotalCents:
      presentmentMoney(body.current_total_price_set) ?? presentmentMoney(body.total_price_set),
    lineItems,
    fulfillments,
    shippingTitle: shippingLine ? str(shippingLine.title) : null,
    hasShippingLine: list(body.shipping_lines).some(isObject),
    totalWeightGrams: num(body.total_weight),
    channel: str(body.source_name),
    note: str(body.note),
    test: body.test === true,
  };
}

function normalizeRestLine(raw: unknown, field: string, order: Json): SourceLineItem {
  if (!isObject(raw)) throw new PayloadError(field, "a line item object is required");
  const quantity = num(raw.quantity) ?? 0;
  const current = num(raw.current_quantity) ?? currentQuantityFallback(raw, quantity, order);
  const title = str(raw.title) ?? str(raw.name) ?? "Item";
  const variantTitle = str(raw.variant_title);
  return {
    id: requireId(raw.id, `${field}.id`) as ShopifyLineItemId,
    productId: idOf(raw.product_id),
    variantId: idOf(raw.variant_id),
    name: str(raw.name) ?? (variantTitle ? `${title} - ${variantTitle}` : title),
    title,
    variantTitle,
    sku: str(raw.sku),
    vendor: str(raw.vendor),
    quantity,
    currentQuantity: current,
    unitPriceCents: shopMoney(raw.price_set, raw.price) ?? 0,
    discountCents: sum(
      list(raw.discount_allocations).map((d) =>
        isObject(d) ? shopMoney(d.amount_set, d.amount) : null,
      ),
    ),
    taxCents: sum(
      list(raw.tax_lines).map((t) => (isObject(t) ? shopMoney(t.price_set, t.price) : null)),
    ),
    options: list(raw.properties)
      .filter(isObject)
      .map((p) => ({ name: str(p.name) ?? "", value: str(p.value) ?? "" }))
      .filter((p) => p.name !== "" && p.value !== "" && !p.name.startsWith("_")),
    requiresShipping: raw.requires_shipping !== false,
    giftCard: raw.gift_card === true,
    grams: num(raw.grams),
  };
}

/**
 * Older payloads lack current_quantity: the ordered quantity less what refunds removed
 * (refund_line_items of the order's refunds).
 */
function currentQuantityFallback(line: Json, quantity: number, order: Json): number {
  const lineId = idOf(line.id);
  const removed = list(order.refunds)
    .filter(isObject)
    .flatMap((r) => list(r.refund_line_items).filter(isObject))
    .filter((rl) => idOf(rl.line_item_id) === lineId)
    .reduce((total, rl) => total + (num(rl.quantity) ?? 0), 0);
  return Math.max(0, quantity - removed);
}

export function normalizeRestFulfillment(
  raw: unknown,
  field: string,
  orderId?: string,
): SourceFulfillment {
  if (!isObject(raw)) throw new PayloadError(field || "body", "a fulfillment object is required");
  const createdAt = requireDate(raw.created_at, `${field}created_at`);
  const numbers = list(raw.tracking_numbers)
    .map(str)
    .filter((v): v is string => v !== null);
  const urls = list(raw.tracking_urls)
    .map(str)
    .filter((v): v is string => v !== null);
  const single = str(raw.tracking_number);
  const singleUrl = str(raw.tracking_url);
  return {
    id: requireId(raw.id, `${field}id`) as ShopifyFulfillmentId,
    orderId: requireId(raw.order_id ?? orderId, `${field}order_id`) as ShopifyOrderId,
    locationId: idOf(raw.location_id) as ShopifyLocationId | null,
    status: str(raw.status) ?? "success",
    shipmentStatus: str(raw.shipment_status),
    trackingCompany: str(raw.tracking_company),
    trackingNumbers: numbers.length > 0 ? numbers : single ? [single] : [],
    trackingUrls: urls.length > 0 ? urls : singleUrl ? [singleUrl] : [],
    name: str(raw.name),
    createdAt,
    updatedAt: optionalDate(raw.updated_at) ?? createdAt,
    lineItems: list(raw.line_items)
      .filter(isObject)
      .map((l) => ({ id: idOf(l.id) as ShopifyLineItemId, quantity: num(l.quantity) ?? 0 }))
      .filter((l) => l.id !== null),
  };
}

function normalizeCustomer(raw: unknown): SourceCustomer | null {
  if (!isObject(raw)) return null;
  return {
    id: idOf(raw.id),
    firstName: str(raw.first_name),
    lastName: str(raw.last_name),
    email: str(raw.email),
    phone: str(raw.phone),
  };
}

function normalizeAddress(raw: unknown): SourceAddress | null {
  if (!isObject(raw)) return null;
  return {
    firstName: str(raw.first_name),
    lastName: str(raw.last_name),
    name: str(raw.name),
    company: str(raw.company),
    address1: str(raw.address1),
    address2: str(raw.address2),
    city: str(raw.city),
    provinceCode: str(raw.province_code),
    province: str(raw.province),
    zip: str(raw.zip),
    countryCode: str(raw.country_code)?.toUpperCase() ?? null,
    phone: str(raw.phone),
    latitude: num(raw.latitude),
    longitude: num(raw.longitude),
  };
}

export { idOf, PayloadError };
