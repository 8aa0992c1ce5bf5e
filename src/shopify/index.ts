export { APP_SCOPES, createShopifyApi, type Shopify, type ShopifyApiOptions } from "./api.ts";
export { parseShopifyJson } from "./json.ts";
export { toCents } from "./money.ts";
export {
  idOf,
  type NormalizedEvent,
  normalizeRestFulfillment,
  normalizeRestOrder,
  normalizeWebhook,
  PayloadError,
} from "./normalize.ts";
export { normalizeTopic, SUBSCRIBED_TOPICS, TOPICS, type TopicKind } from "./topics.ts";
export { verifyShopifyWebhook, type WebhookCheck } from "./webhook-verify.ts";
