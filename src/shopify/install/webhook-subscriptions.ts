/** What the checks need of an Admin GraphQL client (ShopifyAdminClient fits). */
export interface AdminGraphql {
  request<T>(query: string, variables?: Record<string, unknown>): Promise<{ data: T }>;
}

/** `orders/partially_fulfilled` → `ORDERS_PARTIALLY_FULFILLED` (WebhookSubscriptionTopic). */
export const topicEnum = (topic: string) => topic.toUpperCase().replace("/", "_");

const LIST = `#graphql
  query ConnectorWebhookSubscriptions($after: String) {
    webhookSubscriptions(first: 100, after: $after) {
      nodes { id topic uri }
      pageInfo { hasNextPage endCursor }
    }
  }`;

const CREATE = `#graphql
  mutation ConnectorWebhookSubscriptionCreate(
    $topic: WebhookSubscriptionTopic!
    $webhookSubscription: WebhookSubscriptionInput!
  ) {
    webhookSubscriptionCreate(topic: $topic, webhookSubscription: $webhookSubscription) {
      webhookSubscription { id topic uri }
      userErrors { field message }
    }
  }`;

const DELETE = `#graphql
  mutation ConnectorWebhookSubscriptionDelete($id: ID!) {
    webhookSubscriptionDelete(id: $id) {
      deletedWebhookSubscriptionId
      userErrors { field message }
    }
  }`;

interface DeleteData {
  webhookSubscriptionDelete: {
    deletedWebhookSubscriptionId: string | null;
    userErrors: { field: string[] | null; message: string }[];
  };
}

interface ListData {
  webhookSubscriptions: {
    nodes: { id: string; topic: string; uri: string }[];
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

interface CreateData {
  webhookSubscriptionCreate: {
    webhookSubscription: { id: string; topic: string } | null;
    userErrors: { field: string[] | null; message: string }[];
  };
}

export interface SubscriptionCheck {
  /** Topics that were missing and have been created now. */
  created: string[];
  /** Topics already subscribed to the callback. */
  present: string[];
  /** Per-shop subscriptions removed because the app's TOML delivers their topic (`app` mode). */
  removed: string[];
}

export class SubscriptionError extends Error {
  override name = "SubscriptionError";
}

/**
 * Keeps a shop's per-shop subscriptions to `callbackUrl` right (GraphQL `webhookSubscriptions`,
 * then `webhookSubscriptionCreate` / `webhookSubscriptionDelete`). Idempotent: run at install,
 * at start-up and by the hourly check.
 *
 * - `per-shop`: every topic subscribed. Shopify deletes a subscription after repeated failed
 *   deliveries, so a missing one is expected, not exceptional.
 * - `app`: shopify.app.toml's app-specific subscriptions deliver every topic, so a per-shop
 *   subscription of ours to one of them (left by a version that registered per shop) would
 *   deliver each webhook twice: removed.
 */
export async function ensureWebhookSubscriptions(
  graphql: AdminGraphql,
  options: { callbackUrl: string; topics: readonly string[]; mode?: "app" | "per-shop" },
): Promise<SubscriptionCheck> {
  const subscribed = new Map<string, string[]>();
  let after: string | null = null;
  do {
    const { data: page }: { data: ListData } = await graphql.request<ListData>(LIST, { after });
    for (const node of page.webhookSubscriptions.nodes) {
      if (node.uri !== options.callbackUrl) continue;
      subscribed.set(node.topic, [...(subscribed.get(node.topic) ?? []), node.id]);
    }
    after = page.webhookSubscriptions.pageInfo.hasNextPage
      ? page.webhookSubscriptions.pageInfo.endCursor
      : null;
  } while (after);

  const created: string[] = [];
  const present: string[] = [];
  const removed: string[] = [];
  if (options.mode === "app") {
    for (const topic of options.topics) {
      for (const id of subscribed.get(topicEnum(topic)) ?? []) {
        const { data } = await graphql.request<DeleteData>(DELETE, { id });
        const errors = data.webhookSubscriptionDelete.userErrors;
        if (errors.length > 0) {
          throw new SubscriptionError(
            `Shopify refused to remove the duplicate ${topic} subscription: ${errors.map((e) => e.message).join("; ")}`,
          );
        }
        removed.push(topic);
      }
    }
    return { created, present, removed };
  }
  for (const topic of options.topics) {
    if (subscribed.has(topicEnum(topic))) {
      present.push(topic);
      continue;
    }
    const { data: result } = await graphql.request<CreateData>(CREATE, {
      topic: topicEnum(topic),
      webhookSubscription: { uri: options.callbackUrl, format: "JSON" },
    });
    const errors = result.webhookSubscriptionCreate.userErrors;
    if (errors.length > 0 || !result.webhookSubscriptionCreate.webhookSubscription) {
      throw new SubscriptionError(
        `Shopify refused the ${topic} subscription: ${errors.map((e) => e.message).join("; ") || "no subscription returned"}`,
      );
    }
    created.push(topic);
  }
  return { created, present, removed };
}
