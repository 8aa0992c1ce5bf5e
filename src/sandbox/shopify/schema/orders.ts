import type { RestOrder } from "../state.ts";
import { connectionOf, type SortKey } from "./connection.ts";
import type { Resolver, SchemaModule } from "./module.ts";
import { parseOrderSearch } from "./order-search.ts";

/**
 * Orders: `orders(first, after, query, sortKey, reverse)`, `order(id)` and the Order node with
 * Shopify's Admin GraphQL field names. The stand-in keeps each order as the REST-shaped JSON its
 * webhooks carry; the resolvers here translate that one record to the GraphQL shape, so a
 * webhook and a query always describe the same order.
 */
type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
  v !== null && typeof v === "object" && !Array.isArray(v);
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
const gid = (type: string, id: unknown) => `gid://shopify/${type}/${String(id)}`;
const field =
  (name: string): Resolver =>
  (source) =>
    (source as Json)[name] ?? null;

function moneyV2(raw: unknown, fallbackCurrency: string) {
  const m = isObject(raw) ? raw : {};
  return {
    amount: String(m.amount ?? "0.00"),
    currencyCode: String(m.currency_code ?? fallbackCurrency),
  };
}

/** A REST `*_set` (or a plain decimal) as a GraphQL MoneyBag. */
function moneyBag(set: unknown, plain: unknown, order: Json) {
  const currency = String(order.currency ?? "USD");
  if (isObject(set)) {
    return {
      shopMoney: moneyV2(set.shop_money, currency),
      presentmentMoney: moneyV2(set.presentment_money ?? set.shop_money, currency),
    };
  }
  if (plain === undefined || plain === null) return null;
  const m = { amount: String(plain), currency_code: currency };
  return { shopMoney: moneyV2(m, currency), presentmentMoney: moneyV2(m, currency) };
}

const bag =
  (setName: string, plainName?: string, required = true): Resolver =>
  (source) => {
    const o = source as Json;
    const value = moneyBag(o[setName], plainName ? o[plainName] : undefined, o);
    return value ?? (required ? moneyBag(undefined, "0.00", o) : null);
  };

function address(raw: unknown) {
  if (!isObject(raw)) return null;
  return {
    id: gid("MailingAddress", raw.id ?? 0),
    firstName: raw.first_name ?? null,
    lastName: raw.last_name ?? null,
    name: raw.name ?? null,
    company: raw.company ?? null,
    address1: raw.address1 ?? null,
    address2: raw.address2 ?? null,
    city: raw.city ?? null,
    province: raw.province ?? null,
    provinceCode: raw.province_code ?? null,
    zip: raw.zip ?? null,
    country: raw.country ?? null,
    countryCodeV2: raw.country_code ?? null,
    phone: raw.phone ?? null,
    latitude: raw.latitude ?? null,
    longitude: raw.longitude ?? null,
  };
}

const SORT_FIELDS: Record<string, string> = {
  ID: "id",
  CREATED_AT: "created_at",
  UPDATED_AT: "updated_at",
  PROCESSED_AT: "processed_at",
};

function sortKey(sortKeyName: string): (o: RestOrder) => SortKey {
  const name = SORT_FIELDS[sortKeyName] ?? "id";
  return (o) => [
    name === "id" ? Number(o.id) : Date.parse(String(o[name] ?? o.created_at)),
    Number(o.id),
  ];
}

/** Shipment statuses that Fulfillment.displayStatus reports under the same name. */
const SHIPMENT_STATUSES = [
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
];

export const ordersModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
    extend type Query {
      orders(
        first: Int
        after: String
        query: String
        sortKey: OrderSortKeys = ID
        reverse: Boolean = false
      ): OrderConnection!
      order(id: ID!): Order
      ordersCount(query: String, limit: Int = 10000): Count
    }

    enum CountPrecision {
      EXACT
      AT_LEAST
    }

    type Count {
      count: Int!
      precision: CountPrecision!
    }

    enum OrderSortKeys {
      ID
      CREATED_AT
      UPDATED_AT
      PROCESSED_AT
    }

    type OrderConnection {
      nodes: [Order!]!
      edges: [OrderEdge!]!
      pageInfo: PageInfo!
    }

    type OrderEdge {
      cursor: String!
      node: Order!
    }

    enum OrderCancelReason {
      CUSTOMER
      DECLINED
      FRAUD
      INVENTORY
      OTHER
      STAFF
    }

    type Order implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
      name: String!
      number: Int!
      createdAt: DateTime!
      updatedAt: DateTime!
      processedAt: DateTime!
      cancelledAt: DateTime
      cancelReason: OrderCancelReason
      closedAt: DateTime
      email: String
      phone: String
      currencyCode: CurrencyCode!
      presentmentCurrencyCode: CurrencyCode!
      taxesIncluded: Boolean!
      test: Boolean!
      note: String
      sourceName: String
      totalWeight: UnsignedInt64
      subtotalPriceSet: MoneyBag
      currentSubtotalPriceSet: MoneyBag!
      totalPriceSet: MoneyBag!
      currentTotalPriceSet: MoneyBag!
      totalTaxSet: MoneyBag
      currentTotalTaxSet: MoneyBag!
      totalDiscountsSet: MoneyBag
      currentTotalDiscountsSet: MoneyBag!
      totalShippingPriceSet: MoneyBag!
      currentShippingPriceSet: MoneyBag!
      totalTipReceivedSet: MoneyBag!
      currentTotalDutiesSet: MoneyBag
      customer: Customer
      shippingAddress: MailingAddress
      billingAddress: MailingAddress
      shippingLine: ShippingLine
      shippingLines(first: Int): ShippingLineConnection!
      lineItems(first: Int, after: String): LineItemConnection!
      fulfillments(first: Int): [Fulfillment!]!
    }

    type Customer implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
      firstName: String
      lastName: String
      email: String
      phone: String
    }

    type TaxLine {
      title: String
      rate: Float
      priceSet: MoneyBag!
    }

    type ShippingLine {
      title: String!
      originalPriceSet: MoneyBag!
      taxLines: [TaxLine!]!
    }

    type ShippingLineConnection {
      nodes: [ShippingLine!]!
      pageInfo: PageInfo!
    }

    type DiscountAllocation {
      allocatedAmountSet: MoneyBag!
    }

    type Attribute {
      key: String!
      value: String
    }

    type ProductVariant implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
    }

    type Product implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
    }

    type LineItem implements Node {
      id: ID!
      name: String!
      title: String!
      variantTitle: String
      sku: String
      vendor: String
      quantity: Int!
      currentQuantity: Int!
      requiresShipping: Boolean!
      isGiftCard: Boolean!
      originalUnitPriceSet: MoneyBag!
      discountAllocations: [DiscountAllocation!]!
      taxLines(first: Int): [TaxLine!]!
      customAttributes: [Attribute!]!
      variant: ProductVariant
      product: Product
    }

    type LineItemConnection {
      nodes: [LineItem!]!
      edges: [LineItemEdge!]!
      pageInfo: PageInfo!
    }

    type LineItemEdge {
      cursor: String!
      node: LineItem!
    }

    enum FulfillmentStatus {
      CANCELLED
      ERROR
      FAILURE
      OPEN
      PENDING
      SUCCESS
    }

    enum FulfillmentDisplayStatus {
      ATTEMPTED_DELIVERY
      CANCELED
      CONFIRMED
      DELIVERED
      FAILURE
      FULFILLED
      IN_TRANSIT
      LABEL_PRINTED
      LABEL_PURCHASED
      MARKED_AS_FULFILLED
      NOT_DELIVERED
      OUT_FOR_DELIVERY
      PICKED_UP
      READY_FOR_PICKUP
      SUBMITTED
    }

    type Location implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
    }

    type FulfillmentTrackingInfo {
      company: String
      number: String
      url: URL
    }

    type FulfillmentLineItem {
      id: ID!
      quantity: Int
      lineItem: LineItem!
    }

    type FulfillmentLineItemConnection {
      nodes: [FulfillmentLineItem!]!
      pageInfo: PageInfo!
    }

    type Fulfillment implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
      name: String!
      status: FulfillmentStatus!
      displayStatus: FulfillmentDisplayStatus
      createdAt: DateTime!
      updatedAt: DateTime!
      location: Location
      trackingInfo(first: Int): [FulfillmentTrackingInfo!]!
      fulfillmentLineItems(first: Int, after: String): FulfillmentLineItemConnection!
    }
  `,
  resolvers: {
    Query: {
      orders: (_source, args, { shop }) => {
        const matches = parseOrderSearch(args.query as string | undefined);
        const orders = shop.readableOrders().filter(matches);
        return connectionOf(orders, sortKey(String(args.sortKey ?? "ID")), args);
      },
      ordersCount: (_source, args, { shop }) => {
        const matches = parseOrderSearch(args.query as string | undefined);
        const count = shop.readableOrders().filter(matches).length;
        const limit = typeof args.limit === "number" ? args.limit : null;
        return limit !== null && count > limit
          ? { count: limit, precision: "AT_LEAST" }
          : { count, precision: "EXACT" };
      },
      order: (_source, args, { shop }) => {
        const id = String(args.id).replace(/^gid:\/\/shopify\/Order\//, "");
        return shop.readableOrders().find((o) => String(o.id) === id) ?? null;
      },
    },
    Order: {
      id: (o) => gid("Order", (o as Json).id),
      legacyResourceId: (o) => String((o as Json).id),
      number: (o) => (o as Json).order_number ?? 0,
      createdAt: field("created_at"),
      updatedAt: field("updated_at"),
      processedAt: (o) => (o as Json).processed_at ?? (o as Json).created_at,
      cancelledAt: field("cancelled_at"),
      cancelReason: (o) => {
        const reason = (o as Json).cancel_reason;
        return typeof reason === "string" ? reason.toUpperCase() : null;
      },
      closedAt: field("closed_at"),
      email: field("email"),
      phone: field("phone"),
      currencyCode: field("currency"),
      presentmentCurrencyCode: (o) => (o as Json).presentment_currency ?? (o as Json).currency,
      taxesIncluded: (o) => (o as Json).taxes_included === true,
      test: (o) => (o as Json).test === true,
      note: field("note"),
      sourceName: field("source_name"),
      totalWeight: (o) => {
        const w = (o as Json).total_weight;
        return w === null || w === undefined ? null : String(w);
      },
      subtotalPriceSet: bag("subtotal_price_set", "subtotal_price", false),
      currentSubtotalPriceSet: bag("current_subtotal_price_set", "current_subtotal_price"),
      totalPriceSet: bag("total_price_set", "total_price"),
      currentTotalPriceSet: bag("current_total_price_set", "current_total_price"),
      totalTaxSet: bag("total_tax_set", "total_tax", false),
      currentTotalTaxSet: bag("current_total_tax_set", "current_total_tax"),
      totalDiscountsSet: bag("total_discounts_set", "total_discounts", false),
      currentTotalDiscountsSet: bag("current_total_discounts_set", "current_total_discounts"),
      totalShippingPriceSet: bag("total_shipping_price_set"),
      currentShippingPriceSet: bag("current_shipping_price_set"),
      totalTipReceivedSet: bag("total_tip_received_set", "total_tip_received"),
      currentTotalDutiesSet: bag("current_total_duties_set", undefined, false),
      customer: (o) => {
        const c = (o as Json).customer;
        if (!isObject(c)) return null;
        return {
          id: gid("Customer", c.id),
          legacyResourceId: String(c.id),
          firstName: c.first_name ?? null,
          lastName: c.last_name ?? null,
          email: c.email ?? null,
          phone: c.phone ?? null,
        };
      },
      shippingAddress: (o) => address((o as Json).shipping_address),
      billingAddress: (o) => address((o as Json).billing_address),
      shippingLine: (o) => {
        const first = list((o as Json).shipping_lines)[0];
        return first ? { line: first, order: o } : null;
      },
      shippingLines: (o, args) => {
        const lines = list((o as Json).shipping_lines).map((line) => ({ line, order: o }));
        const page = lines.slice(0, Number(args.first ?? 250));
        return {
          nodes: page,
          pageInfo: {
            hasNextPage: page.length < lines.length,
            hasPreviousPage: false,
            startCursor: null,
            endCursor: null,
          },
        };
      },
      lineItems: (o, args) => {
        const lines = list((o as Json).line_items).map((line) => ({ line, order: o }));
        return connectionOf(lines, (l) => [Number(l.line.id), Number(l.line.id)], args);
      },
      fulfillments: (o, args) =>
        list((o as Json).fulfillments)
          .slice(0, Number(args.first ?? 250))
          .map((f) => ({ fulfillment: f, order: o })),
    },
    ShippingLine: {
      title: (s) => (s as { line: Json }).line.title ?? "",
      originalPriceSet: (s) => {
        const { line, order } = s as { line: Json; order: Json };
        return moneyBag(line.price_set, line.price ?? "0.00", order);
      },
      taxLines: (s) => taxLines(s as { line: Json; order: Json }),
    },
    LineItem: {
      id: (s) => gid("LineItem", (s as { line: Json }).line.id),
      name: (s) => {
        const { line } = s as { line: Json };
        return line.name ?? line.title ?? "";
      },
      title: (s) => (s as { line: Json }).line.title ?? "",
      variantTitle: (s) => (s as { line: Json }).line.variant_title ?? null,
      sku: (s) => (s as { line: Json }).line.sku ?? null,
      vendor: (s) => (s as { line: Json }).line.vendor ?? null,
      quantity: (s) => (s as { line: Json }).line.quantity ?? 0,
      currentQuantity: (s) => {
        const { line } = s as { line: Json };
        return line.current_quantity ?? line.quantity ?? 0;
      },
      requiresShipping: (s) => (s as { line: Json }).line.requires_shipping !== false,
      isGiftCard: (s) => (s as { line: Json }).line.gift_card === true,
      originalUnitPriceSet: (s) => {
        const { line, order } = s as { line: Json; order: Json };
        return moneyBag(line.price_set, line.price ?? "0.00", order);
      },
      discountAllocations: (s) => {
        const { line, order } = s as { line: Json; order: Json };
        return list(line.discount_allocations).map((d) => ({
          allocatedAmountSet: moneyBag(d.amount_set, d.amount ?? "0.00", order),
        }));
      },
      taxLines: (s) => taxLines(s as { line: Json; order: Json }),
      customAttributes: (s) =>
        list((s as { line: Json }).line.properties).map((p) => ({
          key: String(p.name ?? ""),
          value: p.value === null || p.value === undefined ? null : String(p.value),
        })),
      variant: (s) => {
        const id = (s as { line: Json }).line.variant_id;
        return id ? { id: gid("ProductVariant", id), legacyResourceId: String(id) } : null;
      },
      product: (s) => {
        const id = (s as { line: Json }).line.product_id;
        return id ? { id: gid("Product", id), legacyResourceId: String(id) } : null;
      },
    },
    Fulfillment: {
      id: (s) => gid("Fulfillment", (s as { fulfillment: Json }).fulfillment.id),
      legacyResourceId: (s) => String((s as { fulfillment: Json }).fulfillment.id),
      name: (s) => (s as { fulfillment: Json }).fulfillment.name ?? "",
      status: (s) =>
        String((s as { fulfillment: Json }).fulfillment.status ?? "success").toUpperCase(),
      displayStatus: (s) => {
        const { fulfillment } = s as { fulfillment: Json };
        const shipment = fulfillment.shipment_status;
        if (typeof shipment === "string" && SHIPMENT_STATUSES.includes(shipment))
          return shipment.toUpperCase();
        if (fulfillment.status === "cancelled") return "CANCELED";
        return "FULFILLED";
      },
      createdAt: (s) => (s as { fulfillment: Json }).fulfillment.created_at,
      updatedAt: (s) => {
        const { fulfillment } = s as { fulfillment: Json };
        return fulfillment.updated_at ?? fulfillment.created_at;
      },
      location: (s) => {
        const id = (s as { fulfillment: Json }).fulfillment.location_id;
        return id ? { id: gid("Location", id), legacyResourceId: String(id) } : null;
      },
      trackingInfo: (s) => {
        const { fulfillment: f } = s as { fulfillment: Json };
        const numbers = Array.isArray(f.tracking_numbers)
          ? (f.tracking_numbers as unknown[])
          : f.tracking_number
            ? [f.tracking_number]
            : [];
        const urls = Array.isArray(f.tracking_urls)
          ? (f.tracking_urls as unknown[])
          : f.tracking_url
            ? [f.tracking_url]
            : [];
        return numbers.map((number, i) => ({
          company: f.tracking_company ?? null,
          number,
          url: urls[i] ?? null,
        }));
      },
      fulfillmentLineItems: (s, args) => {
        const { fulfillment, order } = s as { fulfillment: Json; order: Json };
        const orderLines = list(order.line_items);
        const items = list(fulfillment.line_items).map((l) => ({
          id: gid("FulfillmentLineItem", `${String(fulfillment.id)}${String(l.id)}`),
          quantity: l.quantity ?? 0,
          lineItem: {
            line: orderLines.find((ol) => String(ol.id) === String(l.id)) ?? l,
            order,
          },
          key: Number(l.id),
        }));
        return connectionOf(items, (i) => [i.key, i.key], args);
      },
    },
  },
};

function taxLines({ line, order }: { line: Json; order: Json }) {
  return list(line.tax_lines).map((t) => ({
    title: t.title ?? null,
    rate: typeof t.rate === "number" ? t.rate : null,
    priceSet: moneyBag(t.price_set, t.price ?? "0.00", order),
  }));
}
