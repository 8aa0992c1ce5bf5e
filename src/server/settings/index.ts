export { settingsRoutes } from "./settings-routes.tsx";
