import { z } from "zod";

/**
 * The provider's interface as the server side reads it: what the sandbox accepts and refuses.
 *
 * Written from the provider's interface description (docs/provider-interface.md in the
 * connector), section by section, and deliberately *not* from the connector's client schemas:
 * the contract tests send the client's requests here, so a misreading on one side shows up as a
 * refusal on the other instead of passing both. Where the description says "not shown", the
 * sandbox follows the connector's written decisions (docs/provider-contract.md) and nothing more.
 */

// --- Conventions (section 2 and 8) -----------------------------------------------------------

/**
 * Section 8: RFC 3339 date and time, a `T` *or a space* between them, and an offset (`Z` or
 * `±hh:mm`); a date alone is never accepted. The connector always sends the `T` form.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const dateTime = z.string().regex(RFC3339, "must be an RFC 3339 date-time with an offset");

/** Section 8: `^\+[1-9]\d{1,14}$`, nothing more. */
const e164 = z.string().regex(/^\+[1-9]\d{1,14}$/, "must be an E.164 phone number");

/**
 * Section 2: a JSON number, stored to 2 decimals (extra precision is rounded, not refused). An
 * amount charged or taxed is never below zero; the sandbox refuses a negative one.
 */
const currency = z.number().finite().min(0, "must not be negative");

/** Section 4.1: a plain decimal of up to 8 integer and 2 fraction digits. */
const priceString = z.string().regex(/^\d{1,8}(\.\d{1,2})?$/, "must be a plain decimal price");

/** Whole cents, the unit the total rule (section 2.1) is checked in. */
export const toCents = (value: number): number => Math.round(value * 100);

// --- Orders (2.1–2.4) ------------------------------------------------------------------------

/** 2.4: line1, city, stateOrProvinceCode, postalCode and countryCode are required. */
const address = z.strictObject({
  name: z.string().optional(),
  firstName: z.string().optional(),
  lastName: z.string().optional(),
  line1: z.string().min(1),
  line2: z.string().optional(),
  city: z.string().min(1),
  stateOrProvinceCode: z.string().min(1),
  postalCode: z.string().min(1),
  countryCode: z.string().regex(/^[A-Za-z]{2}$/, "must be an ISO 3166-1 alpha-2 code"),
  latitude: z.number().optional(),
  longitude: z.number().optional(),
});

/** 2.2: both names required; at least one of email or phone. */
const customer = z
  .strictObject({
    sourceCustomerId: z.string().min(1),
    firstName: z.string(),
    lastName: z.string(),
    email: z.string().min(1).optional(),
    phone: e164.optional(),
  })
  .refine((c) => c.email !== undefined || c.phone !== undefined, {
    message: "a customer needs an email or a phone",
    path: ["email"],
  });

/**
 * 2.3 as written by a client: orderId and lineItemId are the service's to assign (the
 * description lists them as required on the resource, which a client cannot know in advance).
 */
const lineItemFields = {
  sourceLineItemId: z.string().min(1),
  productId: z.string().optional(),
  variantId: z.string().optional(),
  name: z.string().min(1),
  quantity: z.number().int().min(1),
  sku: z.string(),
  tax: currency,
  price: currency,
  vendor: z.string().optional(),
  imgUrl: z.string().optional(),
  options: z.array(z.strictObject({ name: z.string(), value: z.string() })).optional(),
  sourceCanceledOn: dateTime.optional(),
};
export const LineItemWrite = z.strictObject(lineItemFields);
export type LineItemWrite = z.infer<typeof LineItemWrite>;

/** 2.1: unknown properties are refused (additionalProperties false). */
const orderFields = {
  storeId: z.number().int(),
  sourceOrderId: z.string().min(1),
  orderNumber: z.string().optional(),
  orderName: z.string().optional(),
  isShippingProtected: z.boolean().optional(),
  currencyConversionRate: z.number().optional(),
  customerCurrencyCode: z.string().length(3).optional(),
  customer,
  lineItems: z.array(LineItemWrite).min(1),
  shippingMoney: currency,
  subtotalMoney: currency,
  taxMoney: currency,
  totalMoney: currency,
  billingAddress: address,
  shippingAddress: address,
  sourceCreatedOn: dateTime.optional(),
  sourceUpdatedOn: dateTime.optional(),
  sourceCanceledOn: dateTime.optional(),
  grams: z.number().optional(),
  shippingTitle: z.string().optional(),
  canceledReason: z.string().optional(),
  notes: z.string().optional(),
  channel: z.string().optional(),
  channelId: z.string().optional(),
};

/** 2.1: totalMoney must equal shippingMoney + subtotalMoney + taxMoney. */
const totalRule = {
  message: "totalMoney must equal shippingMoney + subtotalMoney + taxMoney",
  path: ["totalMoney"],
};
function totalAddsUp(
  o: Partial<Record<"shippingMoney" | "subtotalMoney" | "taxMoney" | "totalMoney", number>>,
) {
  const parts = [o.shippingMoney, o.subtotalMoney, o.taxMoney];
  if (o.totalMoney === undefined || parts.some((p) => p === undefined)) return true;
  return toCents(o.totalMoney) === parts.reduce((sum: number, p) => sum + toCents(p ?? 0), 0);
}

/** POST /orders. */
export const OrderCreate = z.strictObject(orderFields).refine(totalAddsUp, totalRule);
export type OrderCreate = z.infer<typeof OrderCreate>;

/**
 * POST /orders/{orderId} (body not shown; the connector's decision): any of the order's fields
 * except the identity (storeId, sourceOrderId) and lineItems, which change through 4's line-item
 * operations only.
 */
export const OrderUpdate = z
  .strictObject({
    orderNumber: orderFields.orderNumber,
    orderName: orderFields.orderName,
    isShippingProtected: orderFields.isShippingProtected,
    currencyConversionRate: orderFields.currencyConversionRate,
    customerCurrencyCode: orderFields.customerCurrencyCode,
    customer: customer.optional(),
    shippingMoney: currency.optional(),
    subtotalMoney: currency.optional(),
    taxMoney: currency.optional(),
    totalMoney: currency.optional(),
    billingAddress: address.optional(),
    shippingAddress: address.optional(),
    sourceCreatedOn: orderFields.sourceCreatedOn,
    sourceUpdatedOn: orderFields.sourceUpdatedOn,
    sourceCanceledOn: orderFields.sourceCanceledOn,
    grams: orderFields.grams,
    shippingTitle: orderFields.shippingTitle,
    canceledReason: orderFields.canceledReason,
    notes: orderFields.notes,
    channel: orderFields.channel,
    channelId: orderFields.channelId,
  })
  .refine(totalAddsUp, totalRule);
export type OrderUpdate = z.infer<typeof OrderUpdate>;

/** DELETE /orders/{orderId}: what the cancellation carries (not shown; the decision). */
export const OrderCancel = z.strictObject({
  canceledReason: z.string().optional(),
  sourceCanceledOn: dateTime.optional(),
});
export type OrderCancel = z.infer<typeof OrderCancel>;

/** DELETE /orders/{orderId}/line-items/{lineItemId}: no body, or when one is sent, this. */
export const LineItemCancel = z.strictObject({ sourceCanceledOn: dateTime.optional() });
export type LineItemCancel = z.infer<typeof LineItemCancel>;

// --- Fulfillments (2.7) ----------------------------------------------------------------------

/** POST /orders/{orderId}/fulfillments; the service assigns fulfillmentId. */
export const FulfillmentWrite = z.strictObject({
  sourceFulfillmentId: z.string().min(1),
  fulfillmentLocationId: z.number().int(),
  shippingWeightGrams: z.number().optional(),
  deliveredOn: dateTime.optional(),
  trackingInfoCompany: z.string().optional(),
  trackingInfoNumber: z.string().optional(),
  trackingInfoUrl: z.url().optional(),
  estimatedDeliveryOn: dateTime.optional(),
  shipmentStatus: z.string().optional(),
  inTransitOn: dateTime.optional(),
  sourceCreatedOn: dateTime.optional(),
});
export type FulfillmentWrite = z.infer<typeof FulfillmentWrite>;

// --- Products (4.1) --------------------------------------------------------------------------

const publicUrl = z.url({ protocol: /^https?$/ });

export const ProductVariantWrite = z.strictObject({
  options: z.array(z.strictObject({ name: z.string(), value: z.string() })),
  sku: z.string().optional(),
  barcode: z.string().optional(),
  grams: z.number().int().optional(),
  price: priceString.optional(),
  compareAtPrice: priceString.optional(),
  unitCost: priceString.optional(),
  imageUrl: publicUrl.optional(),
});
export type ProductVariantWrite = z.infer<typeof ProductVariantWrite>;

/** 4.1 rule 3: a variant is its option values, whatever the order of its options. */
export function variantKey(options: readonly { name: string; value: string }[]): string {
  return [...options]
    .map((o) => `${o.name}\u0000${o.value}`)
    .sort()
    .join("\u0001");
}

const productFields = {
  handle: z.string().min(1),
  title: z.string().optional(),
  vendor: z.string().optional(),
  productType: z.string().optional(),
  storeId: z.number().int().optional(),
  tags: z.array(z.string().regex(/^[^,]*$/, "a tag must not contain a comma")).optional(),
  status: z.enum(["active", "archived", "draft"]).optional(),
  imageUrl: publicUrl.optional(),
  variants: z.array(ProductVariantWrite).min(1),
};

/** 4.1 rules 1 and 2, over the whole variant list. */
function variantRules(body: { variants: ProductVariantWrite[] }, ctx: z.RefinementCtx): void {
  const names = (v: ProductVariantWrite) =>
    v.options
      .map((o) => o.name)
      .sort()
      .join("\u0000");
  const first = body.variants[0];
  const combinations = new Set<string>();
  for (const [i, variant] of body.variants.entries()) {
    const path = ["variants", i, "options"];
    if (variant.options.length === 0 && !variant.sku) {
      ctx.addIssue({ code: "custom", message: "a variant needs an option or a sku", path });
    }
    if (first && names(variant) !== names(first)) {
      ctx.addIssue({
        code: "custom",
        message: "variants must share one set of option names",
        path,
      });
    }
    const key = variantKey(variant.options);
    if (combinations.has(key)) {
      ctx.addIssue({ code: "custom", message: "two variants repeat one option combination", path });
    }
    combinations.add(key);
  }
}

/** POST /products: handle required. */
export const ProductCreate = z.strictObject(productFields).superRefine(variantRules);
export type ProductCreate = z.infer<typeof ProductCreate>;

/** PUT /products/{productId}: the full body; the handle is fixed at creation and may be left out. */
export const ProductReplace = z
  .strictObject({ ...productFields, handle: productFields.handle.optional() })
  .superRefine(variantRules);
export type ProductReplace = z.infer<typeof ProductReplace>;

// --- Paging (2.6, 4.2) -----------------------------------------------------------------------

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

/** 4.2: default 50, anything above 100 treated as 100. */
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

export const PageQuery = z.object({
  after: z.string().optional(),
  before: z.string().optional(),
  first: z.number().int().min(1).optional(),
  last: z.number().int().min(1).optional(),
  orderBy: z.enum(["asc", "desc"]).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const RegistrationQuery = PageQuery.extend({
  customerEmail: z.string().optional(),
  channelName: z.string().optional(),
  externalId: z.string().optional(),
});
export type RegistrationQuery = z.infer<typeof RegistrationQuery>;

// --- Authentication (5) ----------------------------------------------------------------------

/** 5.2: the client-credentials token request. */
export const TokenRequest = z.strictObject({
  grant_type: z.literal("client_credentials"),
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  audience: z.string().min(1),
});
export type TokenRequest = z.infer<typeof TokenRequest>;

/** 5.4: the scopes seen in a token; 5.5: all of them are granted to every client today. */
export const SCOPES = [
  "write:orders",
  "read:orders",
  "read:stores",
  "read:shipping-claims",
  "write:shipping-claims",
  "read:registrations",
  "read:claims",
  "read:products",
  "write:products",
] as const;
export type Scope = (typeof SCOPES)[number];
