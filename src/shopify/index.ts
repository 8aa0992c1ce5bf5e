export { AdminGraphqlError, AdminThrottledError, ShopifyAdminClient } from "./admin-client.ts";
export {
  AdminClientFactory,
  refetchFromShopify,
  ShopNotConnectedError,
} from "./admin-clients.ts";
export { installAdminFetchRewrite } from "./admin-fetch.ts";
export { APP_SCOPES, createShopifyApi, type Shopify, type ShopifyApiOptions } from "./api.ts";
export { CostThrottle, type QueryCost, type ThrottleStatus } from "./cost-throttle.ts";
export {
  type AdminGraphql,
  OAuthStateStore,
  SealedSessionStorage,
  ShopInstaller,
  type SubscriptionReport,
  topicEnum,
} from "./install/index.ts";
export { parseShopifyJson } from "./json.ts";
export { isLifecycleTopic, TopicMismatchError } from "./lifecycle-payloads.ts";
export { toCents } from "./money.ts";
export {
  idOf,
  type NormalizedEvent,
  normalizeRestFulfillment,
  normalizeRestOrder,
  normalizeWebhook,
  PayloadError,
} from "./normalize.ts";
export { normalizeGraphqlOrder } from "./normalize-graphql.ts";
export { ORDERS_PAGE_SIZE } from "./order-query.ts";
export {
  type OrderPage,
  OrderSource,
  type OrderVersion,
  updatedWindowQuery,
} from "./order-source.ts";
export { ShopMismatchError } from "./payload-fields.ts";
export {
  isTopic,
  normalizeTopic,
  SUBSCRIBED_TOPICS,
  TOPICS,
  type TopicKind,
} from "./topics.ts";
export { verifyShopifyWebhook, type WebhookCheck } from "./webhook-verify.ts";
