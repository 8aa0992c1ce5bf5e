export { settingsRoutes } from "./settings-routes.tsx";
export {
  type BackfillView,
  type SettingsBackfill,
  type SettingsResync,
  SettingsService,
} from "./settings-service.ts";
export { explainFailure, readSyncStatus, type StatusView } from "./sync-status.ts";
