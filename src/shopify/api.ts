// Hono speaks the Fetch API (Request/Response), so the library's web-api adapter is the natural
// one: webhook validation and OAuth take and return standard Request/Response objects.
import "@shopify/shopify-api/adapters/web-api";
import { ApiVersion, LogSeverity, type Shopify, shopifyApi } from "@shopify/shopify-api";

/** The scopes the connector asks for at install (read_all_orders lifts the 60-day window). */
export const APP_SCOPES = [
  "read_orders",
  "read_all_orders",
  "read_fulfillments",
  "read_products",
  "read_locations",
];

/**
 * Scopes a merchant may grant after install (`optional_scopes` in shopify.app.toml):
 * write_orders, for the claims' order tags (off unless the merchant turns them on).
 */
export const OPTIONAL_SCOPES = ["write_orders"];

export interface ShopifyApiOptions {
  apiKey: string;
  apiSecretKey: string;
  appUrl: string;
  apiVersion: string;
}

export function createShopifyApi(options: ShopifyApiOptions): Shopify {
  const url = new URL(options.appUrl);
  const apiVersion = (Object.values(ApiVersion) as string[]).includes(options.apiVersion)
    ? (options.apiVersion as ApiVersion)
    : ApiVersion.October26;
  return shopifyApi({
    apiKey: options.apiKey,
    apiSecretKey: options.apiSecretKey,
    scopes: APP_SCOPES,
    hostName: url.host,
    hostScheme: url.protocol === "http:" ? "http" : "https",
    apiVersion,
    isEmbeddedApp: false,
    // The library logs through console by default; only errors, never payloads.
    logger: { level: LogSeverity.Error, log: async () => {} },
  });
}

export type { Shopify };
