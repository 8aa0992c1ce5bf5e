import { type ServerType, serve } from "@hono/node-server";
import {
  createShopifyStandInApp,
  type ShopifyStandInApp,
  type ShopifyStandInOptions,
} from "./app.ts";

export {
  createShopifyStandInApp,
  type ShopifyStandInApp,
  type ShopifyStandInOptions,
  type UpsertOrderOptions,
} from "./app.ts";
export type {
  StandInCatalog,
  StandInLocation,
  StandInProduct,
  StandInVariant,
} from "./catalog.ts";
export { CostBucket, type ThrottleStatus } from "./cost-bucket.ts";
export { MAX_QUERY_COST } from "./graphql-handler.ts";
export { signOAuthQuery } from "./oauth.ts";
export {
  MAX_PAGE_SIZE,
  PAGINATION_LIMIT,
  type SchemaModule,
  STAND_IN_MODULES,
  type StandInContext,
} from "./schema/index.ts";
export {
  type Delivery,
  MIGRATION_RECOVERY_MS,
  NON_EXPIRING_REFUSED_FROM,
  RECENT_ORDERS_WINDOW_MS,
  REFRESH_TOKEN_TTL_MS,
  type RestOrder,
  type ShopInstallOptions,
  ShopifyStandInState,
  type StandInClock,
  StandInShop,
  type StandInTokenPolicy,
  type WebhookSubscription,
} from "./state.ts";

export interface ShopifyStandInHandle extends Omit<ShopifyStandInApp, "app"> {
  /** http://host:port, where /admin/api/{version}/graphql.json and /_standin live. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the stand-in Shopify over real HTTP on loopback. */
export async function startShopifyStandIn(
  options: ShopifyStandInOptions,
): Promise<ShopifyStandInHandle> {
  const standIn = createShopifyStandInApp(options);
  const host = options.host ?? "127.0.0.1";
  const { server, port } = await new Promise<{ server: ServerType; port: number }>(
    (resolve, reject) => {
      const s = serve(
        { fetch: standIn.app.fetch, hostname: host, port: options.port ?? 0 },
        (info) => resolve({ server: s, port: info.port }),
      );
      s.once("error", reject);
    },
  );
  const { app: _app, ...rest } = standIn;
  return {
    ...rest,
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
export { appSubscriptionsFromToml } from "./app-toml.ts";
export { mintSessionToken, verifySessionToken } from "./session-token.ts";
