export { CALLBACK_PATH, oauthRoutes, validShop } from "./oauth-routes.tsx";
export { ShopSessionCookie } from "./shop-session-cookie.ts";
