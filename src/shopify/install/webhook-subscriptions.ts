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
}

export class SubscriptionError extends Error {
  override name = "SubscriptionError";
}

/**
 * Makes sure every topic the connector needs is subscribed to `callbackUrl` (GraphQL
 * `webhookSubscriptions`, then `webhookSubscriptionCreate` for each missing one). Idempotent:
 * run at install, at start-up and by the reconciliation sweep. Shopify deletes a subscription
 * after repeated failed deliveries, so a missing one is expected, not exceptional.
 */
export async function ensureWebhookSubscriptions(
  graphql: AdminGraphql,
  options: { callbackUrl: string; topics: readonly string[] },
): Promise<SubscriptionCheck> {
  const subscribed = new Set<string>();
  let after: string | null = null;
  do {
    const { data: page }: { data: ListData } = await graphql.request<ListData>(LIST, { after });
    for (const node of page.webhookSubscriptions.nodes) {
      if (node.uri === options.callbackUrl) subscribed.add(node.topic);
    }
    after = page.webhookSubscriptions.pageInfo.hasNextPage
      ? page.webhookSubscriptions.pageInfo.endCursor
      : null;
  } while (after);

  const created: string[] = [];
  const present: string[] = [];
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
  return { created, present };
}
