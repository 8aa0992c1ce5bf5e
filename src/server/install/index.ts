export { validShop } from "./embedded.ts";
export { CALLBACK_PATH, oauthRoutes } from "./oauth-routes.tsx";
export { ShopSessionCookie } from "./shop-session-cookie.ts";
