export { OAuthStateStore } from "./oauth-state.ts";
export { SealedSessionStorage } from "./session-storage.ts";
export { AWAITING_SETTINGS, ShopInstaller, type SubscriptionReport } from "./shop-installer.ts";
export {
  type AdminGraphql,
  ensureWebhookSubscriptions,
  type SubscriptionCheck,
  SubscriptionError,
  topicEnum,
} from "./webhook-subscriptions.ts";
