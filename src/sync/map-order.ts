import { checkWrite, OrderCreate } from "../provider/schemas.ts";
import { mapAddresses } from "./map-address.ts";
import { mapCustomer } from "./map-customer.ts";
import { mapFulfillments } from "./map-fulfillments.ts";
import { mapLine, mapLines } from "./map-lines.ts";
import { conversionRate, mapMoney } from "./map-money.ts";
import type { MapError, MapResult } from "./map-result.ts";
import type { ShopSettings } from "./settings.ts";
import type { SourceOrder } from "./source-order.ts";
import { fromCents } from "./text.ts";

/**
 * SourceOrder + shop settings → the provider's order body and fulfillment bodies. Pure. Every
 * rule and fallback is written in docs/mapping.md; the rules of each part sit on its function
 * (map-money, map-lines, map-customer, map-address, map-fulfillments).
 *
 * Order-level fields:
 * - sourceOrderId = Shopify order id; orderNumber = order_number; orderName = name ("#1001").
 * - sourceCreatedOn / sourceUpdatedOn = created_at / updated_at.
 * - grams = total weight, when known.
 * - shippingTitle, notes (the order note), channel (source name): always sent, "" when absent,
 *   because an update changes only the fields it carries: a note removed in Shopify must be sent
 *   as "" to be removed at the provider too.
 * - customerCurrencyCode = presentment currency; currencyConversionRate: see conversionRate.
 * - isShippingProtected: a line sent has one of the shop's protection variants.
 * - lineItems: see mapLines. An order without a line left is sent with its lines at the quantity
 *   ordered and `linesGone`: planSync creates the order with them (the provider needs one), then
 *   cancels the lines of an open order and leaves those of a canceled one to the cancellation.
 * - sourceCanceledOn and canceledReason are not in the body: the cancellation carries them
 *   (planSync's cancelOrder, the provider's DELETE body), so cancelling costs one call.
 *
 * A fulfillment whose Shopify location the settings do not map is not sent: `held` names it
 * (`fulfillments.<i>.fulfillmentLocationId`), and the order and its other fulfillments are sent
 * all the same, so one unmapped location of a split shipment does not keep the order away.
 *
 * The shop's currency must be the provider store's (settings.currency), otherwise every amount
 * would be wrong: an error on `currency`. Anything else the provider would refuse for a reason we
 * can see is an error naming the field; the final body is checked with the provider's own
 * OrderCreate schema, whose issues come back as errors by field path.
 */
export function mapOrder(order: SourceOrder, settings: ShopSettings): MapResult {
  const errors: MapError[] = [];
  const warnings: string[] = [];

  if (order.currency !== settings.currency) {
    errors.push({
      kind: "settings",
      field: "currency",
      message: `the shop sells in ${order.currency} but the provider store keeps ${settings.currency}, so every amount would be wrong: choose a provider store in ${order.currency} in the settings`,
    });
  }
  const money = mapMoney(order, errors, warnings);

  // No line left (all refunded, removed or restocked): mapLines gives a canceled order its lines
  // at the quantity ordered, and an open one none. The provider keeps an order's canceled lines,
  // so an open one's lines are canceled there (planSync); a new one is created with them first,
  // as the provider needs one to create it.
  let lineItems = mapLines(order, warnings);
  const linesGone =
    !order.lineItems.some((l) => l.currentQuantity > 0) &&
    order.lineItems.some((l) => l.quantity > 0);
  if (linesGone && order.cancelledAt === null) {
    lineItems = order.lineItems
      .filter((l) => l.quantity > 0)
      .map((l) => mapLine({ ...l, currentQuantity: l.quantity }, warnings));
    warnings.push("no line has a quantity left (all removed or refunded): its lines are canceled");
  }
  if (lineItems.length === 0) {
    errors.push({ kind: "order", field: "lineItems", message: "the order has no line item" });
  }

  const addresses = mapAddresses(order, warnings);
  if (addresses === null) {
    errors.push({
      kind: "order",
      field: "shippingAddress",
      message:
        "the order has no usable shipping or billing address (street, city and country code): add one to the order in Shopify",
    });
  }

  const customer = mapCustomer(order, warnings);
  if (customer.email === undefined && customer.phone === undefined) {
    errors.push({
      kind: "customer",
      field: "customer.email",
      message:
        "the order has no valid email or phone for the customer, and the provider needs one: add one to the order in Shopify",
    });
  }

  // A fulfillment from a location the settings do not map holds back only that fulfillment: the
  // order and its other fulfillments are sent, and the job then says what to map.
  const fulfillmentErrors: MapError[] = [];
  const fulfillments = mapFulfillments(order.fulfillments, settings, fulfillmentErrors);
  const held = fulfillmentErrors.filter((e) => e.kind === "settings");
  errors.push(...fulfillmentErrors.filter((e) => e.kind !== "settings"));

  if (errors.length > 0 || money === null || addresses === null) {
    return { ok: false, errors: [...errors, ...held] };
  }

  const protectionVariants = new Set(settings.protectionVariantIds);
  const rate = conversionRate(order);
  const customerCurrencyCode = order.presentmentCurrency.trim().toUpperCase();
  const body: OrderCreate = {
    storeId: settings.storeId,
    sourceOrderId: order.id,
    orderNumber: order.orderNumber,
    orderName: order.name,
    isShippingProtected:
      !(linesGone && order.cancelledAt === null) &&
      lineItems.some((l) => l.variantId !== undefined && protectionVariants.has(l.variantId)),
    ...(/^[A-Z]{3}$/.test(customerCurrencyCode) ? { customerCurrencyCode } : {}),
    ...(rate !== undefined ? { currencyConversionRate: rate } : {}),
    customer,
    lineItems,
    shippingMoney: fromCents(money.shippingCents),
    subtotalMoney: fromCents(money.subtotalCents),
    taxMoney: fromCents(money.taxCents),
    totalMoney: fromCents(money.totalCents),
    billingAddress: addresses.billing,
    shippingAddress: addresses.shipping,
    sourceCreatedOn: order.createdAt,
    sourceUpdatedOn: order.updatedAt,
    ...(order.totalWeightGrams !== null ? { grams: order.totalWeightGrams } : {}),
    shippingTitle: order.shippingTitle ?? "",
    notes: order.note ?? "",
    channel: order.channel ?? "",
  };

  // The last line of defence: whatever slipped past the rules above is caught here, by field.
  const checked = checkWrite(OrderCreate, body);
  if (!checked.success) {
    return {
      ok: false,
      errors: [
        ...checked.error.issues.map((i) => ({
          kind: "order" as const,
          field: i.path.map(String).join("."),
          message: i.message,
        })),
        ...held,
      ],
    };
  }
  return { ok: true, order: checked.data, fulfillments, held, linesGone, warnings };
}
