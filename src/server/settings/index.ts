export { settingsRoutes } from "./settings-routes.tsx";
export {
  type BackfillView,
  type CatalogImportView,
  type SettingsBackfill,
  type SettingsCatalogImports,
  type SettingsResync,
  SettingsService,
} from "./settings-service.ts";
export { explainFailure, readSyncStatus, type StatusView } from "./sync-status.ts";
