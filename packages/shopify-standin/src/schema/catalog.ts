import {
  handleOf,
  type StandInLocation,
  type StandInProduct,
  type StandInVariant,
} from "../catalog.ts";
import { type Connection, connectionOf } from "./connection.ts";
import type { SchemaModule } from "./module.ts";

const gid = (type: string, id: number) => `gid://shopify/${type}/${id}`;
const byId = <T extends { id: number }>(item: T): [number, number] => [item.id, item.id];

/**
 * `shop` (currency, time zone), `products` with their variants and `locations`: what the
 * connector's settings page reads. Field names and types follow Shopify's Admin GraphQL API.
 */
export const catalogModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
    type Shop {
      id: ID!
      name: String!
      myshopifyDomain: String!
      currencyCode: CurrencyCode!
      ianaTimezone: String!
    }

    extend type ProductVariant {
      title: String!
      displayName: String!
      sku: String
      price: Decimal!
    }

    type ProductVariantConnection {
      nodes: [ProductVariant!]!
      pageInfo: PageInfo!
    }

    enum ProductStatus {
      ACTIVE
      ARCHIVED
      DRAFT
    }

    extend type Product {
      title: String!
      handle: String!
      status: ProductStatus!
      variants(first: Int, after: String): ProductVariantConnection!
    }

    type ProductConnection {
      nodes: [Product!]!
      pageInfo: PageInfo!
    }

    extend type Location {
      name: String!
      isActive: Boolean!
    }

    type LocationConnection {
      nodes: [Location!]!
      pageInfo: PageInfo!
    }

    extend type Query {
      shop: Shop!
      products(first: Int, after: String, query: String): ProductConnection!
      product(id: ID!): Product
      locations(first: Int, after: String, includeInactive: Boolean): LocationConnection!
    }
  `,
  resolvers: {
    Query: {
      shop: (_source, _args, { shop }) => ({
        id: gid("Shop", 1),
        name: shop.catalog.name,
        myshopifyDomain: shop.domain,
        currencyCode: shop.catalog.currencyCode,
        ianaTimezone: shop.catalog.ianaTimezone,
      }),
      products: (_source, args, { shop }) => {
        // Only the title search the settings page uses: `title:*word*` or a bare word.
        const term =
          typeof args.query === "string"
            ? args.query
                .replace(/^title:/, "")
                .replaceAll("*", "")
                .toLowerCase()
            : "";
        const products = shop.catalog.products.filter((p) => p.title.toLowerCase().includes(term));
        return mapNodes(connectionOf(products, byId, args), productNode);
      },
      product: (_source, args, { shop }) => {
        const found = shop.catalog.products.find((p) => gid("Product", p.id) === args.id);
        return found ? productNode(found) : null;
      },
      locations: (_source, args, { shop }) => {
        const locations = shop.catalog.locations.filter(
          (l) => l.isActive || args.includeInactive === true,
        );
        return mapNodes(connectionOf(locations, byId, args), locationNode);
      },
    },
    Product: {
      variants: (source, args) =>
        mapNodes(
          connectionOf((source as ProductNode).variantList, byId, { first: 100, ...args }),
          variantNode,
        ),
    },
  },
};

/** Node objects in the shape the orders module gives Product, ProductVariant and Location. */
type ProductNode = ReturnType<typeof productNode>;
const productNode = (p: StandInProduct) => ({
  id: gid("Product", p.id),
  legacyResourceId: String(p.id),
  title: p.title,
  handle: handleOf(p),
  status: p.status,
  variantList: p.variants,
});
const variantNode = (v: StandInVariant) => ({
  id: gid("ProductVariant", v.id),
  legacyResourceId: String(v.id),
  title: v.title,
  displayName: v.title,
  sku: v.sku,
  price: v.price,
});
const locationNode = (l: StandInLocation) => ({
  id: gid("Location", l.id),
  legacyResourceId: String(l.id),
  name: l.name,
  isActive: l.isActive,
});

function mapNodes<T, U>(connection: Connection<T>, f: (item: T) => U) {
  return { ...connection, nodes: connection.nodes.map(f) };
}
