export {
  type Db,
  databaseHeartbeat,
  isPostgresUrl,
  openDatabase,
  type PostgresOptions,
  reachable,
  waitForDatabase,
} from "./database.ts";
export {
  createLinkRepository,
  type IntentRow,
  type LinkRepository,
  type OrderState,
  type SyncedCheck,
} from "./link-repository.ts";
export { PRIVACY_DUE_MS, PrivacyRequestRepository } from "./privacy-request-repository.ts";
export {
  type NewProviderEvent,
  type ProviderAccount,
  type ProviderEventKind,
  ProviderEventRepository,
  type ProviderEventRow,
  ProviderWebhookSecretRepository,
  type StoreShop,
} from "./provider-event-repository.ts";
export * as schema from "./schema.ts";
export {
  type KeptOutOrder,
  type KeptOutReason,
  type ShopRecord,
  ShopRepository,
  type ShopSettingsInput,
  type ShopStatus,
} from "./shop-repository.ts";
