import { createHash } from "node:crypto";
import { type CountryCode, parsePhoneNumberFromString } from "libphonenumber-js";
import {
  type Address,
  type Customer,
  type FulfillmentWrite,
  FulfillmentWrite as FulfillmentWriteSchema,
  type LineItemWrite,
  type OrderCreate,
  OrderCreate as OrderCreateSchema,
} from "../provider/schemas.ts";
import type { ShopSettings } from "./settings.ts";
import type {
  SourceAddress,
  SourceFulfillment,
  SourceLineItem,
  SourceOrder,
} from "./source-order.ts";

export interface MapError {
  field: string;
  message: string;
}

export type MapResult =
  | { ok: true; order: OrderCreate; fulfillments: FulfillmentWrite[]; warnings: string[] }
  | { ok: false; errors: MapError[] };

const cents = (value: number) => Math.round(value) / 100;

/**
 * SourceOrder + shop settings → the provider's order and fulfillments. Pure. Every rule and
 * fallback is documented in docs/mapping.md. Anything the provider would refuse for a reason we
 * can see is returned as an error naming the field, so the order is dead-lettered with it
 * instead of being sent and refused.
 */
export function mapOrder(order: SourceOrder, settings: ShopSettings): MapResult {
  const errors: MapError[] = [];
  const warnings: string[] = [];

  if (order.currency !== settings.currency) {
    errors.push({
      field: "currency",
      message: `the shop sells in ${order.currency} but the provider store keeps ${settings.currency}; money would be wrong`,
    });
  }

  // Money: total, shipping and tax as Shopify reports them now (after edits and refunds); the
  // subtotal is derived so that total = shipping + subtotal + tax holds to the cent by
  // construction. It then holds product lines after discounts (net of tax for tax-inclusive
  // shops), tips and duties.
  // With tax-inclusive prices the shipping price holds its own tax, which taxMoney already
  // counts: shipping is sent net of it, so shipping, subtotal and tax are all net amounts.
  const { totalCents, taxCents } = order.money;
  const shippingCents = order.taxesIncluded
    ? order.money.shippingCents - order.money.shippingTaxCents
    : order.money.shippingCents;
  const subtotalCents = totalCents - shippingCents - taxCents;
  if (subtotalCents < 0) {
    errors.push({
      field: "subtotalMoney",
      message: `total ${totalCents / 100} is less than shipping plus tax`,
    });
  }
  if (
    !order.taxesIncluded &&
    subtotalCents !== order.money.subtotalCents + order.money.tipCents + order.money.dutiesCents
  ) {
    warnings.push("derived subtotal differs from Shopify's subtotal + tips + duties");
  }

  const lineItems = mapLines(order, warnings);
  if (lineItems.length === 0)
    errors.push({ field: "lineItems", message: "the order has no line left to send" });

  const billing = mapAddress(order.billingAddress) ?? mapAddress(order.shippingAddress);
  const shipping = mapAddress(order.shippingAddress) ?? billing;
  if (!shipping || !billing) {
    errors.push({
      field: "shippingAddress",
      message: "the order has neither a usable shipping nor billing address",
    });
  }

  const customer = mapCustomer(order, warnings);
  if (!customer.email && !customer.phone) {
    errors.push({
      field: "customer.email",
      message: "the order has no usable email or phone for the customer",
    });
  }

  const fulfillments = mapFulfillments(order.fulfillments, settings, errors);

  if (errors.length > 0 || !shipping || !billing) return { ok: false, errors };

  const protectedOrder = order.lineItems.some(
    (l) => l.variantId !== null && settings.protectionVariantIds.includes(l.variantId),
  );
  const rate =
    order.presentmentCurrency !== order.currency && order.presentmentTotalCents && totalCents > 0
      ? Math.round((order.presentmentTotalCents / totalCents) * 1e6) / 1e6
      : undefined;

  const body: OrderCreate = {
    storeId: settings.storeId,
    sourceOrderId: order.id,
    orderNumber: order.orderNumber,
    orderName: order.name,
    isShippingProtected: protectedOrder,
    customerCurrencyCode: order.presentmentCurrency,
    ...(rate !== undefined ? { currencyConversionRate: rate } : {}),
    customer,
    lineItems,
    shippingMoney: cents(shippingCents),
    subtotalMoney: cents(subtotalCents),
    taxMoney: cents(taxCents),
    totalMoney: cents(totalCents),
    billingAddress: billing,
    shippingAddress: shipping,
    sourceCreatedOn: order.createdAt,
    sourceUpdatedOn: order.updatedAt,
    ...(order.totalWeightGrams !== null ? { grams: order.totalWeightGrams } : {}),
    // Always sent, empty when absent: an order update only changes the fields it carries, so a
    // note removed in Shopify must be sent as "" to be removed at the provider too.
    shippingTitle: order.shippingTitle ?? "",
    notes: order.note ?? "",
    channel: order.channel ?? "",
  };

  // Last line of defence: whatever slipped through the rules above is caught here, by field.
  const checked = OrderCreateSchema.safeParse(body);
  if (!checked.success) {
    return {
      ok: false,
      errors: checked.error.issues.map((i) => ({
        field: i.path.map(String).join("."),
        message: i.message,
      })),
    };
  }
  return { ok: true, order: checked.data, fulfillments, warnings };
}

/**
 * One provider line per Shopify line with a current quantity above 0. A canceled order whose
 * lines were all restocked keeps its original lines (the provider needs at least one, and the
 * cancellation says the rest).
 */
function mapLines(order: SourceOrder, warnings: string[]): LineItemWrite[] {
  const live = order.lineItems.filter((l) => l.currentQuantity > 0);
  const source =
    live.length === 0 && order.cancelledAt
      ? order.lineItems
          .filter((l) => l.quantity > 0)
          .map((l) => ({ ...l, currentQuantity: l.quantity }))
      : live;
  return source.map((line) => mapLine(line, warnings));
}

function mapLine(line: SourceLineItem, warnings: string[]): LineItemWrite {
  const share = line.quantity > 0 ? line.currentQuantity / line.quantity : 1;
  // The provider's price is per unit: the unit price after this line's discount.
  const discountPerUnit = line.quantity > 0 ? line.discountCents / line.quantity : 0;
  const unitCents = Math.max(0, Math.round(line.unitPriceCents - discountPerUnit));
  const sku =
    line.sku ?? (line.variantId ? `shopify-variant-${line.variantId}` : `shopify-line-${line.id}`);
  if (!line.sku) warnings.push(`line ${line.id} has no SKU; sent as ${sku}`);
  return {
    sourceLineItemId: line.id,
    ...(line.productId ? { productId: line.productId } : {}),
    ...(line.variantId ? { variantId: line.variantId } : {}),
    name: line.name || line.title,
    quantity: line.currentQuantity,
    sku,
    tax: cents(Math.round(line.taxCents * share)),
    price: cents(unitCents),
    ...(line.vendor ? { vendor: line.vendor } : {}),
    ...(line.options.length > 0 ? { options: line.options } : {}),
  };
}

function mapAddress(address: SourceAddress | null): Address | null {
  if (!address?.countryCode || !/^[A-Z]{2}$/.test(address.countryCode)) return null;
  const line1 = address.address1 ?? address.address2;
  if (!line1 || !address.city) return null;
  return {
    ...(address.name ? { name: address.name } : {}),
    ...(address.firstName ? { firstName: address.firstName } : {}),
    ...(address.lastName ? { lastName: address.lastName } : {}),
    line1,
    ...(address.address1 && address.address2 ? { line2: address.address2 } : {}),
    city: address.city,
    // Countries without provinces: the country code stands in (the provider requires a value).
    stateOrProvinceCode: address.provinceCode ?? address.province ?? address.countryCode,
    // Countries without postal codes: "-" (the provider requires a non-empty value).
    postalCode: address.zip ?? "-",
    countryCode: address.countryCode,
    ...(address.latitude !== null && Math.abs(address.latitude) <= 90
      ? { latitude: address.latitude }
      : {}),
    ...(address.longitude !== null && Math.abs(address.longitude) <= 180
      ? { longitude: address.longitude }
      : {}),
  };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function mapCustomer(order: SourceOrder, warnings: string[]): Customer {
  const c = order.customer;
  const email = [c?.email, order.email].find((e): e is string => !!e && EMAIL.test(e));
  const country = (order.shippingAddress?.countryCode ??
    order.billingAddress?.countryCode ??
    undefined) as CountryCode | undefined;
  const candidates = [
    c?.phone,
    order.phone,
    order.billingAddress?.phone,
    order.shippingAddress?.phone,
  ].filter((p): p is string => !!p);
  let phone: string | undefined;
  for (const candidate of candidates) {
    const parsed = parsePhoneNumberFromString(candidate, country);
    if (parsed?.isValid()) {
      phone = parsed.number;
      break;
    }
  }
  if (!phone && candidates.length > 0)
    warnings.push("no phone of the order is a valid number; phone left out");
  const firstName =
    c?.firstName ?? order.billingAddress?.firstName ?? order.shippingAddress?.firstName ?? "";
  const lastName =
    c?.lastName ?? order.billingAddress?.lastName ?? order.shippingAddress?.lastName ?? "";
  return {
    sourceCustomerId: c?.id ?? guestId(email ?? phone ?? `order:${order.id}`),
    firstName,
    lastName,
    ...(email ? { email } : {}),
    ...(phone ? { phone } : {}),
  };
}

/** A stable customer id for guest checkouts: the same email always gives the same id. */
export function guestId(identity: string): string {
  return `guest:${createHash("sha256").update(identity.trim().toLowerCase()).digest("hex").slice(0, 16)}`;
}

/**
 * Only fulfillments that shipped (`success`) are sent; cancelled ones are not. A fulfillment
 * already sent and later cancelled in Shopify stays at the provider (it has no delete): it is
 * mapped with shipment status "cancelled", which planSync sends only for one already sent.
 */
function mapFulfillments(
  fulfillments: SourceFulfillment[],
  settings: ShopSettings,
  errors: MapError[],
): FulfillmentWrite[] {
  const out: FulfillmentWrite[] = [];
  fulfillments.forEach((f, i) => {
    if (f.status !== "success" && f.status !== "cancelled") return;
    const location =
      (f.locationId !== null ? settings.locationMap[f.locationId] : undefined) ??
      settings.defaultLocationId;
    if (location === null || location === undefined) {
      errors.push({
        field: `fulfillments.${i}.fulfillmentLocationId`,
        message: `Shopify location ${f.locationId ?? "(none)"} is not mapped to a provider fulfillment location; map it in the settings`,
      });
      return;
    }
    const url = f.trackingUrls.find((u) => /^https?:\/\//.test(u) && URL.canParse(u));
    const body: FulfillmentWrite = {
      sourceFulfillmentId: f.id,
      fulfillmentLocationId: location,
      ...(f.trackingCompany ? { trackingInfoCompany: f.trackingCompany } : {}),
      ...(f.trackingNumbers[0] ? { trackingInfoNumber: f.trackingNumbers[0] } : {}),
      ...(url ? { trackingInfoUrl: url } : {}),
      ...(f.status === "cancelled"
        ? { shipmentStatus: "cancelled" }
        : f.shipmentStatus
          ? { shipmentStatus: f.shipmentStatus }
          : {}),
      inTransitOn: f.createdAt,
      ...(f.shipmentStatus === "delivered" ? { deliveredOn: f.updatedAt } : {}),
      sourceCreatedOn: f.createdAt,
    };
    const checked = FulfillmentWriteSchema.safeParse(body);
    if (checked.success) out.push(checked.data);
    else {
      for (const issue of checked.error.issues) {
        errors.push({ field: `fulfillments.${i}.${issue.path.join(".")}`, message: issue.message });
      }
    }
  });
  return out;
}
