import type { WebhookSubscription } from "../state.ts";
import { connectionOf } from "./connection.ts";
import type { SchemaModule } from "./module.ts";

/**
 * Webhook subscriptions made through the Admin API, stored per shop: the stand-in sends its
 * webhooks to exactly these. `uri` is the 2025-04+ field; `callbackUrl` the older one.
 */
export const webhooksModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
    enum WebhookSubscriptionTopic {
      APP_UNINSTALLED
      SHOP_UPDATE
      ORDERS_CREATE
      ORDERS_UPDATED
      ORDERS_CANCELLED
      ORDERS_FULFILLED
      ORDERS_PARTIALLY_FULFILLED
      ORDERS_PAID
      ORDERS_EDITED
      REFUNDS_CREATE
      FULFILLMENTS_CREATE
      FULFILLMENTS_UPDATE
      BULK_OPERATIONS_FINISH
    }

    enum WebhookSubscriptionFormat {
      JSON
      XML
    }

    input WebhookSubscriptionInput {
      uri: String
      callbackUrl: URL
      format: WebhookSubscriptionFormat
    }

    type WebhookSubscription implements Node {
      id: ID!
      topic: WebhookSubscriptionTopic!
      uri: String!
      format: WebhookSubscriptionFormat!
      createdAt: DateTime!
      updatedAt: DateTime!
    }

    type WebhookSubscriptionConnection {
      nodes: [WebhookSubscription!]!
      pageInfo: PageInfo!
    }

    type WebhookSubscriptionCreatePayload {
      webhookSubscription: WebhookSubscription
      userErrors: [UserError!]!
    }

    type WebhookSubscriptionDeletePayload {
      deletedWebhookSubscriptionId: ID
      userErrors: [UserError!]!
    }

    extend type Query {
      webhookSubscriptions(
        first: Int
        after: String
        topics: [WebhookSubscriptionTopic!]
      ): WebhookSubscriptionConnection!
    }

    extend type Mutation {
      webhookSubscriptionCreate(
        topic: WebhookSubscriptionTopic!
        webhookSubscription: WebhookSubscriptionInput!
      ): WebhookSubscriptionCreatePayload!
      webhookSubscriptionDelete(id: ID!): WebhookSubscriptionDeletePayload!
    }
  `,
  resolvers: {
    Query: {
      webhookSubscriptions: (_source, args, { shop }) => {
        const topics = args.topics as string[] | null | undefined;
        const subs = shop.subscriptions.filter((s) => !topics || topics.includes(s.topic));
        return connectionOf(subs, (s) => [idNumber(s.id), idNumber(s.id)], args);
      },
    },
    Mutation: {
      webhookSubscriptionCreate: (_source, args, { shop }) => {
        const topic = String(args.topic);
        const input = args.webhookSubscription as { uri?: string; callbackUrl?: string };
        const uri = input.uri ?? input.callbackUrl;
        if (!uri || !/^https?:\/\//.test(uri)) {
          return {
            webhookSubscription: null,
            userErrors: [{ field: ["webhookSubscription", "uri"], message: "Address is invalid" }],
          };
        }
        if (shop.subscriptions.some((s) => s.topic === topic && s.uri === uri)) {
          return {
            webhookSubscription: null,
            userErrors: [
              {
                field: ["webhookSubscription", "uri"],
                message: "Address for this topic has already been taken",
              },
            ],
          };
        }
        const now = new Date().toISOString();
        const sub: WebhookSubscription = {
          id: `gid://shopify/WebhookSubscription/${shop.nextId()}`,
          topic,
          uri,
          createdAt: now,
          updatedAt: now,
        };
        shop.subscriptions.push(sub);
        return { webhookSubscription: { ...sub, format: "JSON" }, userErrors: [] };
      },
      webhookSubscriptionDelete: (_source, args, { shop }) => {
        const index = shop.subscriptions.findIndex((s) => s.id === args.id);
        if (index < 0) {
          return {
            deletedWebhookSubscriptionId: null,
            userErrors: [{ field: ["id"], message: "Webhook subscription does not exist" }],
          };
        }
        shop.subscriptions.splice(index, 1);
        return { deletedWebhookSubscriptionId: args.id, userErrors: [] };
      },
    },
    WebhookSubscription: {
      format: () => "JSON",
    },
  },
};

const idNumber = (id: string) => Number(id.split("/").at(-1));
