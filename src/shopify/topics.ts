/**
 * The webhook topics the connector subscribes to, and what each payload carries.
 *
 * - full-order: the whole REST order resource; becomes the order snapshot directly.
 * - fulfillment: one fulfillment with its order_id; merged into the snapshot by fulfillment id.
 * - order-hint: only a diff (orders/edited: `order_edit` with additions/removals; refunds/create:
 *   refund lines and transactions). The full state is obtained in two ways: Shopify sends
 *   orders/updated after an edit or a refund, and the worker refetches the order from the Admin
 *   GraphQL API when a hint is newer than the stored snapshot (docs/shopify-events.md).
 * - app-uninstalled, privacy: lifecycle and GDPR topics, handled outside order sync.
 * - shop-update: the shop's settings (currency, time zone), picked up without a reinstall.
 */
export type TopicKind =
  | "full-order"
  | "fulfillment"
  | "order-hint"
  | "app-uninstalled"
  | "shop-update"
  | "privacy";

export const TOPICS = {
  "orders/create": "full-order",
  "orders/updated": "full-order",
  "orders/cancelled": "full-order",
  "orders/fulfilled": "full-order",
  "orders/partially_fulfilled": "full-order",
  "orders/paid": "full-order",
  "orders/edited": "order-hint",
  "refunds/create": "order-hint",
  "fulfillments/create": "fulfillment",
  "fulfillments/update": "fulfillment",
  "app/uninstalled": "app-uninstalled",
  "shop/update": "shop-update",
  "customers/data_request": "privacy",
  "customers/redact": "privacy",
  "shop/redact": "privacy",
} as const satisfies Record<string, TopicKind>;

export type Topic = keyof typeof TOPICS;

/** The topics whose events sync an order (the sync job's trigger when a webhook queued it). */
export type OrderTopic = {
  [T in Topic]: (typeof TOPICS)[T] extends "full-order" | "fulfillment" | "order-hint" ? T : never;
}[Topic];

export function isTopic(name: string): name is Topic {
  return Object.hasOwn(TOPICS, name);
}

export function isOrderTopic(name: string): name is OrderTopic {
  if (!isTopic(name)) return false;
  const kind: TopicKind = TOPICS[name];
  return kind === "full-order" || kind === "fulfillment" || kind === "order-hint";
}

/** The topics registered at install (privacy topics are configured in the app's TOML). */
export const SUBSCRIBED_TOPICS = Object.entries(TOPICS)
  .filter(([, kind]) => kind !== "privacy")
  .map(([topic]) => topic);

/**
 * `orders/create`, `ORDERS_CREATE` and `orders_create` are one topic: the library may hand back
 * the GraphQL enum form.
 */
export function normalizeTopic(topic: string): string {
  const lower = topic.trim().toLowerCase();
  if (lower.includes("/")) return lower;
  const known = Object.keys(TOPICS).find((t) => t.replace("/", "_") === lower);
  return known ?? lower.replace("_", "/");
}
