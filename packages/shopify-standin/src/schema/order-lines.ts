import type { SchemaModule } from "./module.ts";
import { gid, type Json, list, moneyBag, taxLines } from "./rest-json.ts";

/** An order's line items and shipping lines, read from its REST record (`{ line, order }`). */
export const orderLinesModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
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
  `,
  resolvers: {
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
  },
};
