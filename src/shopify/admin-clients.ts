import type { Logger } from "pino";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { type SecretBox, sealedFor } from "../lib/secret-box.ts";
import type { ShopRecord } from "../store/index.ts";
import type { ShopDomain, SourceOrder } from "../sync/source-order.ts";
import { type AdminToken, ShopifyAdminClient } from "./admin-client.ts";
import { installAdminFetchRewrite } from "./admin-fetch.ts";
import { createShopifyApi, type Shopify } from "./api.ts";
import { CostThrottle } from "./cost-throttle.ts";
import { OrderSource } from "./order-source.ts";

/** The shop has no offline access token (not installed through OAuth, or uninstalled). */
export class ShopNotConnectedError extends Error {
  override name = "ShopNotConnectedError";

  constructor(
    message: string,
    /** The shop's domain, for whoever says how to connect it. */
    readonly shop?: string,
  ) {
    super(message);
  }
}

/**
 * Admin GraphQL clients per shop, from the shop's sealed offline access token. One cost
 * throttle per process, shared by every client of a shop.
 */
export class AdminClientFactory {
  readonly shopify: Shopify;
  readonly throttle = new CostThrottle();
  readonly #secrets: SecretBox;
  readonly #logger: Logger;
  readonly #cache = new Map<string, { version: string; client: ShopifyAdminClient }>();
  /** Keeps expiring offline tokens fresh (set once the shop store exists). */
  tokensFor?: (shop: string) => AdminToken;

  constructor(options: { config: RuntimeConfig; secrets: SecretBox; logger: Logger }) {
    const { config } = options;
    if (config.env.SHOPIFY_ADMIN_URL) installAdminFetchRewrite(config.env.SHOPIFY_ADMIN_URL);
    this.shopify = createShopifyApi({
      apiKey: config.shopifyApiKey,
      apiSecretKey: config.shopifyApiSecret,
      appUrl: config.appUrl,
      apiVersion: config.env.SHOPIFY_API_VERSION,
    });
    this.#secrets = options.secrets;
    this.#logger = options.logger;
  }

  for(shop: ShopRecord): ShopifyAdminClient {
    const version = `${shop.updatedAt}|${shop.accessTokenSealed ?? ""}`;
    const cached = this.#cache.get(shop.shop);
    if (cached && cached.version === version) return cached.client;
    if (!shop.accessTokenSealed) {
      throw new ShopNotConnectedError(
        `shop ${shop.shop} has no Shopify access token; install the app on it first`,
        shop.shop,
      );
    }
    // The token is read fresh for each query: an expiring one is refreshed before its end and
    // after a 401; a non-expiring one that Shopify refuses (its migration's answer was lost, or
    // 2027-01-01 has passed) is migrated then, or the shop paused.
    const client = new ShopifyAdminClient({
      shopify: this.shopify,
      shop: shop.shop,
      accessToken: this.tokensFor
        ? this.tokensFor(shop.shop)
        : this.#secrets.open(shop.accessTokenSealed, sealedFor.shopifyAccessToken(shop.shop)),
      throttle: this.throttle,
      logger: this.#logger,
    });
    this.#cache.set(shop.shop, { version, client });
    return client;
  }
}

/**
 * An order's current state from the Shopify Admin API, for snapshots that are stale or gone (the
 * worker after orders/edited, the dead-letter retry); null for a shop without an access token.
 */
export function refetchFromShopify(admin: AdminClientFactory) {
  return async (shop: ShopRecord, orderId: string): Promise<SourceOrder | null> => {
    try {
      return await new OrderSource(admin.for(shop), shop.shop as ShopDomain).fetchOrder(orderId);
    } catch (error) {
      if (error instanceof ShopNotConnectedError) return null;
      throw error;
    }
  };
}
