import type { RestOrder } from "../state.ts";
import { connectionOf, type SortKey } from "./connection.ts";
import type { Resolver, SchemaModule } from "./module.ts";
import { parseOrderSearch } from "./order-search.ts";
import { gid, isObject, type Json, list, moneyBag } from "./rest-json.ts";

/**
 * Orders: `orders(first, after, query, sortKey, reverse)`, `order(id)`, `ordersCount` and the
 * Order node with Shopify's Admin GraphQL field names (its lines in order-lines.ts, its
 * fulfillments in fulfillments.ts). The stand-in keeps each order as the REST-shaped JSON its
 * webhooks carry; the resolvers here translate that one record to the GraphQL shape, so a
 * webhook and a query always describe the same order.
 */
const field =
  (name: string): Resolver =>
  (source) =>
    (source as Json)[name] ?? null;

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
  },
};
