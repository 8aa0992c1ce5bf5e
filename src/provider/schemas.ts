import { z } from "zod";

/**
 * The provider's contract (docs/provider-interface.md, sections 2, 4 and 5) as zod schemas. Write schemas are
 * what we send and what the sandbox enforces; response schemas are what we accept back, and are
 * deliberately looser (passthrough of unknown fields) so that a service that adds fields does not
 * break the connector. Choices where the spec says "not shown": docs/provider-contract.md.
 */

// ---------------------------------------------------------------------------------------------
// Scalars

/** RFC 3339 date-time with an offset (`Z` or `±hh:mm`); values without one are refused. */
export const DateTime = z.iso.datetime({ offset: true });

/** E.164: a plus, a non-zero first digit, at most 15 digits (docs/provider-interface.md, section 8). */
export const E164_PATTERN = /^\+[1-9]\d{1,14}$/;
export const PhoneE164 = z
  .string()
  .regex(E164_PATTERN, "must be an E.164 phone number such as +14155550123");

/** Money: a JSON number in the store's base currency, stored with 2 decimals. */
export const Money = z.number().finite().nonnegative();

/** Product price strings: plain decimal, up to 8 integer and 2 fraction digits, no symbols. */
export const PRICE_PATTERN = /^\d{1,8}(\.\d{1,2})?$/;
export const PriceString = z
  .string()
  .regex(
    PRICE_PATTERN,
    "must be a plain decimal such as 19.99 (no currency symbol, no separators)",
  );

export const ProviderOrderId = z.number().int().positive().brand<"ProviderOrderId">();
export type ProviderOrderId = z.infer<typeof ProviderOrderId>;
export const ProviderLineItemId = z.number().int().positive().brand<"ProviderLineItemId">();
export type ProviderLineItemId = z.infer<typeof ProviderLineItemId>;
export const ProviderFulfillmentId = z.number().int().positive().brand<"ProviderFulfillmentId">();
export type ProviderFulfillmentId = z.infer<typeof ProviderFulfillmentId>;
export const ProviderStoreId = z.number().int().positive().brand<"ProviderStoreId">();
export type ProviderStoreId = z.infer<typeof ProviderStoreId>;
export const ProviderProductId = z.number().int().positive().brand<"ProviderProductId">();
export type ProviderProductId = z.infer<typeof ProviderProductId>;

/** Whole cents of a money value, the unit every money comparison is made in. */
export const toCents = (value: number): number => Math.round(value * 100);

// ---------------------------------------------------------------------------------------------
// Orders (2.1–2.4)

export const Address = z.strictObject({
  name: z.string().optional(),
  firstName: z.string().optional(),
  lastName: z.string().optional(),
  line1: z.string().min(1),
  line2: z.string().optional(),
  city: z.string().min(1),
  stateOrProvinceCode: z.string().min(1),
  postalCode: z.string().min(1),
  countryCode: z.string().regex(/^[A-Z]{2}$/, "must be an ISO 3166-1 alpha-2 code such as US"),
  latitude: z.number().min(-90).max(90).optional(),
  longitude: z.number().min(-180).max(180).optional(),
});
export type Address = z.infer<typeof Address>;

export const Customer = z
  .strictObject({
    sourceCustomerId: z.string().min(1),
    firstName: z.string(),
    lastName: z.string(),
    email: z.email().optional(),
    phone: PhoneE164.optional(),
  })
  .refine((c) => c.email !== undefined || c.phone !== undefined, {
    message: "at least one of email or phone is required",
    path: ["email"],
  });
export type Customer = z.infer<typeof Customer>;

export const LineItemOption = z.strictObject({ name: z.string(), value: z.string() });

/** A line item as written: the service assigns orderId and lineItemId (see provider-contract.md). */
export const LineItemWrite = z.strictObject({
  sourceLineItemId: z.string().min(1),
  productId: z.string().optional(),
  variantId: z.string().optional(),
  name: z.string().min(1),
  quantity: z.number().int().positive(),
  sku: z.string().min(1),
  tax: Money,
  price: Money,
  vendor: z.string().optional(),
  imgUrl: z.string().optional(),
  options: z.array(LineItemOption).optional(),
  sourceCanceledOn: DateTime.optional(),
});
export type LineItemWrite = z.infer<typeof LineItemWrite>;

export const LineItem = z.looseObject({
  orderId: z.number(),
  lineItemId: z.number(),
  sourceLineItemId: z.string(),
  productId: z.string().nullish(),
  variantId: z.string().nullish(),
  name: z.string(),
  quantity: z.number(),
  sku: z.string(),
  tax: z.number(),
  price: z.number(),
  vendor: z.string().nullish(),
  imgUrl: z.string().nullish(),
  options: z.array(z.object({ name: z.string(), value: z.string() })).nullish(),
  sourceCanceledOn: z.string().nullish(),
  createdOn: z.string().nullish(),
  updatedOn: z.string().nullish(),
});
export type LineItem = z.infer<typeof LineItem>;

const orderFields = {
  storeId: z.number().int().positive(),
  sourceOrderId: z.string().min(1),
  orderNumber: z.string().optional(),
  orderName: z.string().optional(),
  isShippingProtected: z.boolean().optional(),
  currencyConversionRate: z.number().positive().optional(),
  customerCurrencyCode: z
    .string()
    .regex(/^[A-Z]{3}$/, "must be an ISO 4217 code")
    .optional(),
  customer: Customer,
  lineItems: z.array(LineItemWrite).min(1, "an order needs at least 1 line item"),
  shippingMoney: Money,
  subtotalMoney: Money,
  taxMoney: Money,
  totalMoney: Money,
  billingAddress: Address,
  shippingAddress: Address,
  sourceCreatedOn: DateTime.optional(),
  sourceUpdatedOn: DateTime.optional(),
  sourceCanceledOn: DateTime.optional(),
  grams: z.number().nonnegative().optional(),
  shippingTitle: z.string().optional(),
  canceledReason: z.string().optional(),
  notes: z.string().optional(),
  channel: z.string().optional(),
  channelId: z.string().optional(),
};

const totalMatches = (o: {
  shippingMoney?: number;
  subtotalMoney?: number;
  taxMoney?: number;
  totalMoney?: number;
}) =>
  o.totalMoney === undefined ||
  o.shippingMoney === undefined ||
  o.subtotalMoney === undefined ||
  o.taxMoney === undefined ||
  toCents(o.totalMoney) ===
    toCents(o.shippingMoney) + toCents(o.subtotalMoney) + toCents(o.taxMoney);

const totalRule = {
  message: "totalMoney must equal shippingMoney + subtotalMoney + taxMoney (to the cent)",
  path: ["totalMoney"],
};

/** POST /orders body. Strict: the service refuses unknown properties. */
export const OrderCreate = z.strictObject(orderFields).refine(totalMatches, totalRule);
export type OrderCreate = z.infer<typeof OrderCreate>;

/**
 * POST /orders/{orderId} body (not shown in the spec; our choice): any subset of the order's
 * writable fields except lineItems, which change only through the line-item operations. The
 * money fields, when any is sent, are sent together so the total rule can be checked.
 */
const {
  lineItems: _lineItems,
  storeId: _storeId,
  sourceOrderId: _sourceOrderId,
  ...updatable
} = orderFields;
export const OrderUpdate = z
  .strictObject({
    ...Object.fromEntries(Object.entries(updatable).map(([k, v]) => [k, v.optional()])),
  } as { [K in keyof typeof updatable]: z.ZodOptional<(typeof updatable)[K]> })
  .refine(totalMatches, totalRule);
export type OrderUpdate = z.infer<typeof OrderUpdate>;

/** DELETE /orders/{orderId} body (the provider's public docs). */
export const OrderCancel = z.strictObject({
  canceledReason: z.string().optional(),
  sourceCanceledOn: DateTime.optional(),
});
export type OrderCancel = z.infer<typeof OrderCancel>;

/** DELETE /orders/{orderId}/line-items/{lineItemId} body (optional). */
export const LineItemCancel = z.strictObject({ sourceCanceledOn: DateTime.optional() });
export type LineItemCancel = z.infer<typeof LineItemCancel>;

const looseAddress = z.looseObject({
  line1: z.string().nullish(),
  city: z.string().nullish(),
  stateOrProvinceCode: z.string().nullish(),
  postalCode: z.string().nullish(),
  countryCode: z.string().nullish(),
});

/** An order as the service returns it. */
export const Order = z.looseObject({
  orderId: z.number(),
  storeId: z.number(),
  sourceOrderId: z.string(),
  orderNumber: z.string().nullish(),
  orderName: z.string().nullish(),
  isShippingProtected: z.boolean().nullish(),
  customer: z.looseObject({ sourceCustomerId: z.string().nullish() }).nullish(),
  lineItems: z.array(LineItem).default([]),
  shippingMoney: z.number().nullish(),
  subtotalMoney: z.number().nullish(),
  taxMoney: z.number().nullish(),
  totalMoney: z.number().nullish(),
  billingAddress: looseAddress.nullish(),
  shippingAddress: looseAddress.nullish(),
  sourceCanceledOn: z.string().nullish(),
  canceledReason: z.string().nullish(),
  createdOn: z.string().nullish(),
  updatedOn: z.string().nullish(),
  carbonGrams: z.number().nullish(),
  carbonCalculationMethod: z.string().nullish(),
});
export type Order = z.infer<typeof Order>;

// ---------------------------------------------------------------------------------------------
// Paging (2.5, 2.6)

export const PageInfo = z.object({
  hasNextPage: z.boolean(),
  hasPreviousPage: z.boolean(),
  startCursor: z.string().nullable(),
  endCursor: z.string().nullable(),
});
export type PageInfo = z.infer<typeof PageInfo>;

export const OrderList = z.looseObject({ orders: z.array(Order), pageInfo: PageInfo });
export type OrderList = z.infer<typeof OrderList>;

/** Cursor paging parameters shared by the list endpoints (4.2). */
export const PageQuery = z.object({
  after: z.string().optional(),
  before: z.string().optional(),
  first: z.number().int().positive().optional(),
  last: z.number().int().positive().optional(),
  orderBy: z.enum(["asc", "desc"]).optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

/** The largest page the service returns; larger requests are clamped (4.2). */
export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 50;

// ---------------------------------------------------------------------------------------------
// Fulfillments (2.7)

/** POST /orders/{orderId}/fulfillments body; the service assigns fulfillmentId. */
export const FulfillmentWrite = z.strictObject({
  sourceFulfillmentId: z.string().min(1),
  fulfillmentLocationId: z.number().int().positive(),
  shippingWeightGrams: z.number().nonnegative().optional(),
  deliveredOn: DateTime.optional(),
  trackingInfoCompany: z.string().optional(),
  trackingInfoNumber: z.string().optional(),
  trackingInfoUrl: z.url().optional(),
  estimatedDeliveryOn: DateTime.optional(),
  shipmentStatus: z.string().optional(),
  inTransitOn: DateTime.optional(),
  sourceCreatedOn: DateTime.optional(),
});
export type FulfillmentWrite = z.infer<typeof FulfillmentWrite>;

export const Fulfillment = z.looseObject({
  fulfillmentId: z.number(),
  sourceFulfillmentId: z.string(),
  fulfillmentLocationId: z.number(),
  shippingWeightGrams: z.number().nullish(),
  deliveredOn: z.string().nullish(),
  trackingInfoCompany: z.string().nullish(),
  trackingInfoNumber: z.string().nullish(),
  trackingInfoUrl: z.string().nullish(),
  estimatedDeliveryOn: z.string().nullish(),
  shipmentStatus: z.string().nullish(),
  inTransitOn: z.string().nullish(),
  sourceCreatedOn: z.string().nullish(),
  createdOn: z.string().nullish(),
  updatedOn: z.string().nullish(),
});
export type Fulfillment = z.infer<typeof Fulfillment>;

export const FulfillmentList = z.looseObject({ fulfillments: z.array(Fulfillment) });
export type FulfillmentList = z.infer<typeof FulfillmentList>;

// ---------------------------------------------------------------------------------------------
// Stores (2.8)

export const Store = z.looseObject({
  storeId: z.number(),
  currencyCode: z.string(),
  ianaTimezone: z.string(),
});
export type Store = z.infer<typeof Store>;

// ---------------------------------------------------------------------------------------------
// Products (2.9, 4.1)

const ProductTag = z.string().regex(/^[^,]*$/, "a tag must not contain a comma");
const ProductStatus = z.enum(["active", "archived", "draft"]);
const HttpUrl = z.url({ protocol: /^https?$/ });

export const ProductVariantWrite = z.strictObject({
  options: z.array(z.strictObject({ name: z.string().min(1), value: z.string().min(1) })),
  sku: z.string().optional(),
  barcode: z.string().optional(),
  grams: z.number().int().nonnegative().optional(),
  price: PriceString.optional(),
  compareAtPrice: PriceString.optional(),
  unitCost: PriceString.optional(),
  imageUrl: HttpUrl.optional(),
});
export type ProductVariantWrite = z.infer<typeof ProductVariantWrite>;

/** Identity of a variant: its option values, independent of option order (rule 3). */
export const variantKey = (options: { name: string; value: string }[]): string =>
  JSON.stringify(
    options.map((o) => [o.name, o.value]).sort(([a], [b]) => String(a).localeCompare(String(b))),
  );

const productWriteFields = {
  handle: z.string().min(1),
  title: z.string().optional(),
  vendor: z.string().optional(),
  productType: z.string().optional(),
  storeId: z.number().int().positive().optional(),
  tags: z.array(ProductTag).optional(),
  status: ProductStatus.optional(),
  imageUrl: HttpUrl.optional(),
  variants: z.array(ProductVariantWrite).min(1, "a product needs at least 1 variant"),
};

/** Rules 1–3 of section 4.1, checked on the whole variant list. */
function checkVariants(product: { variants: ProductVariantWrite[] }, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  let optionNames: string | undefined;
  product.variants.forEach((variant, i) => {
    if (variant.options.length === 0 && !variant.sku) {
      ctx.addIssue({
        code: "custom",
        message: "each variant needs at least one option or a sku",
        path: ["variants", i, "options"],
      });
    }
    const names = JSON.stringify(variant.options.map((o) => o.name).sort());
    if (optionNames === undefined) optionNames = names;
    else if (names !== optionNames) {
      ctx.addIssue({
        code: "custom",
        message: "every variant must use the same set of option names",
        path: ["variants", i, "options"],
      });
    }
    const key = variantKey(variant.options);
    if (seen.has(key)) {
      ctx.addIssue({
        code: "custom",
        message: "two variants repeat the same combination of option values",
        path: ["variants", i, "options"],
      });
    }
    seen.add(key);
  });
}

/** POST /products body: handle required. */
export const ProductCreate = z.strictObject(productWriteFields).superRefine(checkVariants);
export type ProductCreate = z.infer<typeof ProductCreate>;

/** PUT /products/{productId} body: full representation; handle may be omitted (it is fixed). */
export const ProductReplace = z
  .strictObject({ ...productWriteFields, handle: productWriteFields.handle.optional() })
  .superRefine(checkVariants);
export type ProductReplace = z.infer<typeof ProductReplace>;

export const ProductVariant = z.looseObject({
  variantId: z.number(),
  options: z.array(z.object({ name: z.string(), value: z.string() })),
  sku: z.string().nullish(),
  barcode: z.string().nullish(),
  grams: z.number().nullish(),
  price: z.string().nullish(),
  compareAtPrice: z.string().nullish(),
  unitCost: z.string().nullish(),
  imageUrl: z.string().nullish(),
  title: z.string().nullish(),
  displayName: z.string().nullish(),
  displayPosition: z.number().nullish(),
});
export type ProductVariant = z.infer<typeof ProductVariant>;

export const Product = z.looseObject({
  productId: z.number(),
  storeId: z.number(),
  handle: z.string(),
  title: z.string().nullish(),
  vendor: z.string().nullish(),
  productType: z.string().nullish(),
  tags: z.array(z.string()).nullish(),
  status: ProductStatus,
  imageUrl: z.string().nullish(),
  options: z
    .array(z.object({ name: z.string(), position: z.number(), values: z.array(z.string()) }))
    .nullish(),
  variants: z.array(ProductVariant),
  createdOn: z.string().nullish(),
  updatedOn: z.string().nullish(),
  deletedOn: z.string().nullish(),
});
export type Product = z.infer<typeof Product>;

// ---------------------------------------------------------------------------------------------
// Registrations (2.10, 4.2) and claims (2.11, as far as shown)

export const Registration = z.looseObject({
  registrationId: z.number(),
  storeId: z.number(),
  externalId: z.string(),
  customerEmail: z.string(),
  customerName: z.string().nullish(),
  channelName: z.string(),
  customerProvidedOrderNumber: z.string().nullish(),
  estimatedPurchaseDate: z.string().nullish(),
  referrer: z.string().nullish(),
  emailMarketingConsent: z.boolean(),
  emailMarketingConsentCollectedOn: z.string().nullish(),
  lineItems: z.array(
    z.looseObject({
      lineItemId: z.number(),
      sourceLineItemId: z.string(),
      productId: z.string().nullish(),
      variantId: z.string().nullish(),
      sku: z.string(),
      name: z.string(),
      quantity: z.number(),
      imgUrl: z.string().nullish(),
    }),
  ),
  customFields: z.array(z.object({ name: z.string(), value: z.string() })).nullish(),
  proofOfPurchaseFileUrls: z.array(z.string()).nullish(),
  incentiveDiscounts: z
    .array(
      z.looseObject({
        code: z.string(),
        message: z.string().nullish(),
        redemptionUrl: z.string().nullish(),
        expiresOn: z.string().nullish(),
      }),
    )
    .nullish(),
  createdOn: z.string().nullish(),
  updatedOn: z.string().nullish(),
  canceledOn: z.string().nullish(),
  claims: z.array(
    z.looseObject({
      claimId: z.number(),
      externalId: z.string(),
      claimType: z.enum(["Warranty", "Return"]),
    }),
  ),
});
export type Registration = z.infer<typeof Registration>;

/**
 * PageInfo as a registration list may carry it. The spec says all four fields are always
 * present; a service that leaves one out (or answers without pageInfo, or with an empty cursor)
 * is read as "no more in that direction" / "no cursor" instead of failing the whole page
 * (docs/provider-contract.md, Registrations).
 */
const TolerantPageInfo = z
  .looseObject({
    hasNextPage: z.boolean().nullish(),
    hasPreviousPage: z.boolean().nullish(),
    startCursor: z.string().nullish(),
    endCursor: z.string().nullish(),
  })
  .nullish()
  .transform(
    (p): PageInfo => ({
      hasNextPage: p?.hasNextPage ?? false,
      hasPreviousPage: p?.hasPreviousPage ?? false,
      startCursor: p?.startCursor || null,
      endCursor: p?.endCursor || null,
    }),
  );

export const RegistrationList = z.looseObject({
  registrations: z.array(Registration),
  pageInfo: TolerantPageInfo,
});
export type RegistrationList = z.infer<typeof RegistrationList>;

export const RegistrationQuery = PageQuery.extend({
  customerEmail: z.string().optional(),
  channelName: z.string().optional(),
  externalId: z.string().optional(),
});
export type RegistrationQuery = z.infer<typeof RegistrationQuery>;

/** Claim: only its opening fields are shown (2.11); the rest passes through untouched. */
export const Claim = z.looseObject({
  storeId: z.number(),
  claimId: z.number(),
  externalId: z.string(),
  resolutionSummary: z
    .looseObject({ giftCards: z.array(z.looseObject({ giftCardId: z.number() })) })
    .optional(),
});
export type Claim = z.infer<typeof Claim>;

// ---------------------------------------------------------------------------------------------
// Authentication (5)

export const TokenRequest = z.strictObject({
  grant_type: z.literal("client_credentials"),
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
  audience: z.string().min(1),
});
export type TokenRequest = z.infer<typeof TokenRequest>;

export const TokenResponse = z.looseObject({
  access_token: z.string().min(1),
  scope: z.string().optional(),
  expires_in: z.coerce.number().positive(),
  token_type: z.string().optional(),
});
export type TokenResponse = z.infer<typeof TokenResponse>;

/** Every scope the spec names (section 5.4). */
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

// ---------------------------------------------------------------------------------------------
// Errors (7; the body shape is our choice, see provider-contract.md)

export const ErrorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    fields: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    existingOrderId: z.number().optional(),
  }),
  requestId: z.string().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

// ---------------------------------------------------------------------------------------------
// Write bodies checked once

/** Bodies that passed `checkWrite`, frozen, with the schema that checked them. */
const checkedBodies = new WeakMap<object, z.ZodType>();

/**
 * Checks a write body against its schema, as `schema.safeParse` does; a body that passes comes
 * back deep-frozen and remembered, so that the client sends it without checking it again (the
 * mapping checks every order and fulfillment it builds: the same schema ran twice per call).
 * Frozen, it cannot change between the check and the request.
 */
export function checkWrite<S extends z.ZodType>(
  schema: S,
  body: unknown,
): z.ZodSafeParseResult<z.infer<S>> {
  const result = schema.safeParse(body);
  if (result.success && typeof result.data === "object" && result.data !== null) {
    checkedBodies.set(deepFreeze(result.data), schema);
  }
  return result;
}

/** Whether `body` is a result of `checkWrite` with this very schema. */
export function checkedWith(schema: z.ZodType, body: unknown): boolean {
  return typeof body === "object" && body !== null && checkedBodies.get(body) === schema;
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (typeof inner === "object" && inner !== null && !Object.isFrozen(inner)) deepFreeze(inner);
  }
  return Object.freeze(value);
}
