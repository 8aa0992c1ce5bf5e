export {
  type BackfillView,
  type Catalog,
  type CatalogImportView,
  type Environment,
  type SettingsBackfill,
  type SettingsCatalogImports,
  type SettingsDeps,
  type SettingsResync,
  SettingsService,
} from "./settings-service.ts";
export { SUBSCRIPTIONS_FAILING, shopStateInWords } from "./shop-state.ts";
export {
  explainFailure,
  type FailureView,
  readSyncStatus,
  type StatusView,
} from "./sync-status.ts";
