export { settingsRoutes } from "./settings-routes.tsx";
export {
  type BackfillView,
  explainFailure,
  type SettingsBackfill,
  type SettingsResync,
  SettingsService,
} from "./settings-service.ts";
