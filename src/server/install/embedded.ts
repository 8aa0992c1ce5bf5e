import type { Context } from "hono";
import type { Shopify } from "../../shopify/api.ts";
import { ShopDomain, ShopDomainInput } from "../../sync/source-order.ts";

/** Shopify's App Bridge and Polaris web components, loaded from Shopify's CDN in production. */
export const APP_BRIDGE_CDN = "https://cdn.shopify.com/shopifycloud/app-bridge.js";
export const POLARIS_CDN = "https://cdn.shopify.com/shopifycloud/polaris.js";
const SHOPIFY_ADMIN_ORIGIN = "https://admin.shopify.com";

/**
 * Where the embedded page gets App Bridge (and Polaris) and who may frame it. In production
 * both scripts come from Shopify's CDN and only `admin.shopify.com` and the shop's own
 * `https://{shop}` may frame the page. In local development (SHOPIFY_ADMIN_URL) the stand-in
 * Shopify serves a small App Bridge of its own and frames the page from its admin page; Polaris
 * is left out there (no CDN offline) and the page falls back to its own admin-like styles.
 */
export interface EmbeddedConfig {
  apiKey: string;
  appBridgeUrl: string;
  polarisUrl: string | null;
  /** Origins allowed to frame the page, besides the shop and admin.shopify.com. */
  extraFrameAncestors: string[];
}

export function embeddedConfig(apiKey: string, standInAdminUrl?: string): EmbeddedConfig {
  if (!standInAdminUrl) {
    return {
      apiKey,
      appBridgeUrl: APP_BRIDGE_CDN,
      polarisUrl: POLARIS_CDN,
      extraFrameAncestors: [],
    };
  }
  const standIn = new URL(standInAdminUrl);
  // The stand-in listens on loopback: a browser may open its admin page as 127.0.0.1 or as
  // localhost, and the frame-ancestors check compares origins literally.
  const origins = new Set([standIn.origin]);
  for (const name of ["127.0.0.1", "localhost"]) {
    if (standIn.hostname === "127.0.0.1" || standIn.hostname === "localhost") {
      origins.add(`${standIn.protocol}//${name}:${standIn.port}`);
    }
  }
  return {
    apiKey,
    appBridgeUrl: new URL("/app-bridge.js", standIn).toString(),
    polarisUrl: null,
    extraFrameAncestors: [...origins],
  };
}

/** The query parameters that keep a page inside the admin across navigations. */
export interface EmbeddedParams {
  shop: ShopDomain;
  host: string;
}

/**
 * A request made inside the Shopify admin: `embedded=1` from the admin's frame URL, or a
 * session token in `Authorization` (App Bridge adds it to the page's own fetches).
 */
export function isEmbeddedRequest(c: Context): boolean {
  return c.req.query("embedded") === "1" || /^Bearer\s/i.test(c.req.header("authorization") ?? "");
}

/**
 * The Shopify session token a request carries, wherever the embedded page put it:
 * `Authorization: Bearer …` (App Bridge's fetch), `id_token` in the query (the admin's frame
 * URL, the redirect after a save, and a file upload's action) or an `id_token` field of a posted
 * url-encoded form (the page's submit handler fetches a fresh token before sending a form).
 *
 * A multipart body is never read here: it may be a file of megabytes, and nothing may buffer a
 * body before it knows who is asking. Url-encoded forms are small: the web app refuses them past
 * FORM_MAX_BYTES (src/server/app.ts) before this runs, also when they are chunked.
 */
export async function sessionTokenOf(c: Context): Promise<string | null> {
  const bearer = c.req.header("authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
  if (bearer) return bearer;
  const query = c.req.query("id_token");
  if (query) return query;
  if (c.req.method === "POST" && contentTypeOf(c) === "application/x-www-form-urlencoded") {
    // Hono caches the parsed body: the route reads the same form afterwards.
    const field = (await c.req.parseBody()).id_token;
    if (typeof field === "string" && field !== "") return field;
  }
  return null;
}

/** The media type of a request's body, lower-cased, without parameters ("" when none). */
export function contentTypeOf(c: Context): string {
  return (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

/**
 * The shop a session token speaks for: an HS256 JWT signed with the app's secret, for our API
 * key (`aud`), unexpired (`exp`, `nbf`), whose `dest` is the shop (`session.decodeSessionToken`
 * checks all but the shop's form). Null for anything else.
 */
export async function shopOfSessionToken(
  shopify: Shopify,
  token: string,
): Promise<ShopDomain | null> {
  try {
    const payload = await shopify.session.decodeSessionToken(token);
    const shop = ShopDomain.safeParse(new URL(String(payload.dest)).hostname);
    return shop.success ? shop.data : null;
  } catch {
    return null;
  }
}

/**
 * The shop domain, validated the way Shopify's library does (`sanitizeShop`, which also reads
 * an admin URL such as `admin.shopify.com/store/x` as `x.myshopify.com`) and then against the
 * connector's own rule (`*.myshopify.com`, read in lower case as any host name:
 * `My-Store.myshopify.com` is that shop): `evil.com` and `x.myshopify.com.evil.com` are
 * refused here, before any redirect is built from them.
 */
export function validShop(shopify: Shopify, raw: string | undefined): ShopDomain | null {
  if (!raw) return null;
  const sanitized = shopify.utils.sanitizeShop(raw.trim().toLowerCase(), false);
  if (!sanitized) return null;
  const parsed = ShopDomainInput.safeParse(sanitized);
  return parsed.success ? parsed.data : null;
}

/** `shop` and `host` from the admin's frame URL, validated as Shopify's library does. */
export function embeddedParams(shopify: Shopify, c: Context): EmbeddedParams | null {
  const shop = validShop(shopify, c.req.query("shop"));
  const host = shopify.utils.sanitizeHost(c.req.query("host") ?? "");
  return shop && host ? { shop, host } : null;
}

/**
 * `frame-ancestors`: the shop, the Shopify admin and (development) the stand-in admin; `'none'`
 * for no shop, or for anything but a *.myshopify.com domain (never a value from a request as is).
 */
export function frameAncestors(config: EmbeddedConfig, shop: string | null): string {
  if (!shop || !ShopDomain.safeParse(shop).success) return "'none'";
  return [`https://${shop}`, SHOPIFY_ADMIN_ORIGIN, ...config.extraFrameAncestors].join(" ");
}

/** The URL of the settings page again, inside the admin, authenticated by `token`. */
export function embeddedUrl(
  path: string,
  params: EmbeddedParams,
  token: string,
  extra: Record<string, string> = {},
): string {
  const query = new URLSearchParams({
    ...extra,
    embedded: "1",
    shop: params.shop,
    host: params.host,
    id_token: token,
  });
  return `${path}?${query.toString()}`;
}
