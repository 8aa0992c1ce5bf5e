export {
  ClaimsSettings,
  type ClaimsSettingsDeps,
  type ClaimsView,
  GRANT_HELP,
  type RegistrationEventView,
} from "./claims-settings.ts";
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
export {
  explainFailure,
  type FailureView,
  readSyncStatus,
  type StatusView,
} from "./sync-status.ts";
