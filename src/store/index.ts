export { type Db, openDatabase } from "./database.ts";
export { type IntentRow, LinkRepository, type SyncedCheck } from "./link-repository.ts";
export { PRIVACY_DUE_MS, PrivacyRequestRepository } from "./privacy-request-repository.ts";
export * as schema from "./schema.ts";
export {
  type ShopRecord,
  ShopRepository,
  type ShopSettingsInput,
  type ShopStatus,
} from "./shop-repository.ts";
