import { GraphQLError } from "graphql";
import type { RestOrder, StandInShop } from "../state.ts";
import type { SchemaModule } from "./module.ts";

/**
 * An order's tags (`Order.tags`, `tagsAdd`, `tagsRemove`) and the scopes the app holds on the
 * shop (`currentAppInstallation.accessScopes`). Changing an order's tags needs `write_orders`,
 * as on Shopify: without it the mutation is refused with ACCESS_DENIED. The order keeps its
 * tags as the REST field does, one comma-separated string.
 */
export const tagsModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
    type AccessScope {
      handle: String!
      description: String!
    }

    type AppInstallation {
      id: ID!
      accessScopes: [AccessScope!]!
    }

    type TagsAddPayload {
      node: Node
      userErrors: [UserError!]!
    }

    type TagsRemovePayload {
      node: Node
      userErrors: [UserError!]!
    }

    extend type Order {
      tags: [String!]!
    }

    extend type Query {
      currentAppInstallation: AppInstallation!
    }

    extend type Mutation {
      tagsAdd(id: ID!, tags: [String!]!): TagsAddPayload
      tagsRemove(id: ID!, tags: [String!]!): TagsRemovePayload
    }
  `,
  resolvers: {
    Query: {
      currentAppInstallation: (_source, _args, { shop }) => ({
        id: `gid://shopify/AppInstallation/${shop.domain}`,
        accessScopes: shop.scopes.map((handle) => ({ handle, description: handle })),
      }),
    },
    Order: {
      tags: (o) => tagsOf(o as RestOrder),
    },
    Mutation: {
      tagsAdd: (_source, args, { shop }) =>
        changeTags(shop, "tagsAdd", String(args.id), args.tags as string[], (tags, given) => [
          ...tags,
          ...given.filter((t) => !tags.some((have) => have.toLowerCase() === t.toLowerCase())),
        ]),
      tagsRemove: (_source, args, { shop }) =>
        changeTags(shop, "tagsRemove", String(args.id), args.tags as string[], (tags, given) =>
          tags.filter((t) => !given.some((gone) => gone.toLowerCase() === t.toLowerCase())),
        ),
    },
  },
};

export function tagsOf(order: RestOrder): string[] {
  const raw = order.tags;
  if (typeof raw !== "string") return [];
  return raw
    .split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");
}

function changeTags(
  shop: StandInShop,
  field: "tagsAdd" | "tagsRemove",
  id: string,
  given: string[],
  change: (tags: string[], given: string[]) => string[],
) {
  const match = /^gid:\/\/shopify\/Order\/(\d+)$/.exec(id);
  if (!match?.[1]) {
    return {
      node: null,
      userErrors: [{ field: ["id"], message: "The stand-in tags orders only (an Order GID)" }],
    };
  }
  if (!shop.scopes.includes("write_orders")) {
    throw new GraphQLError(
      `Access denied for ${field} field. Required access: \`write_orders\` access scope.`,
      { extensions: { code: "ACCESS_DENIED" } },
    );
  }
  const order = shop.orders.get(match[1]);
  if (!order) return { node: null, userErrors: [{ field: ["id"], message: "Order not found" }] };
  const invalid = given.find((t) => t.trim() === "" || t.length > 255);
  if (invalid !== undefined) {
    return { node: null, userErrors: [{ field: ["tags"], message: "Tag is invalid" }] };
  }
  const tags = change(
    tagsOf(order),
    given.map((t) => t.trim()),
  );
  order.tags = tags.join(", ");
  return { node: { ...order, __typename: "Order" }, userErrors: [] };
}
