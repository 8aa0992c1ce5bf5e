import { Hono } from "hono";
import { standInAdminRoutes } from "./admin.ts";
import { runGraphql } from "./graphql-handler.ts";
import { standInOAuthRoutes } from "./oauth.ts";
import { buildStandInSchema, STAND_IN_MODULES } from "./schema/index.ts";
import {
  type Delivery,
  type RestOrder,
  type ShopInstallOptions,
  ShopifyStandInState,
  type StandInShop,
} from "./state.ts";
import { type AppSubscription, deliverWebhook } from "./webhook-sender.ts";

export interface ShopifyStandInOptions {
  host?: string;
  port?: number;
  /** The app's client secret: webhooks and OAuth callbacks are signed with it. */
  apiSecret: string;
  /** The app's client ID, checked by the OAuth endpoints when set. */
  apiKey?: string;
  apiVersion?: string;
  /** Shopify answers THROTTLED with 200 (and sometimes 429): tests exercise both. */
  throttledStatus?: 200 | 429;
  /** How webhooks leave (default: global fetch); tests may hand them to an in-process app. */
  webhookFetch?: typeof fetch;
  /** Shops installed at start. */
  shops?: ({ shop: string } & ShopInstallOptions)[];
  /** The life of an expiring offline access token, as Shopify's `expires_in` (default 3600). */
  tokenTtlSeconds?: number;
  /**
   * The app's URL (APP_URL): the stand-in admin at /store/{handle}/apps/order-sync frames it
   * (needs apiKey). Without it the stand-in has no admin page.
   */
  appUrl?: string;
  /**
   * The app's app-specific subscriptions (shopify.app.toml's `[[webhooks.subscriptions]]`, URIs
   * made absolute): every shop's events are delivered to them, besides the shop's own.
   */
  appSubscriptions?: AppSubscription[];
  /**
   * The stand-in's clock (epoch ms, default Date.now): token and refresh-token expiry, the
   * migration's 7 days and the end of non-expiring tokens are read from it.
   */
  now?: () => number;
  /**
   * From when non-expiring offline tokens are refused, as Shopify does from 2027-01-01
   * (NON_EXPIRING_REFUSED_FROM); unset, they keep working (tests and demos that use them).
   */
  nonExpiringRefusedFrom?: number;
}

export interface UpsertOrderOptions {
  /** false simulates a webhook Shopify never delivered: the order changes, nobody is told. */
  deliver?: boolean;
  /** Topics to send; default orders/create for a new order, orders/updated otherwise. */
  topics?: string[];
}

export interface ShopifyStandInApp {
  app: Hono;
  state: ShopifyStandInState;
  installShop(shop: string, options?: ShopInstallOptions): StandInShop;
  /** Creates or replaces an order (REST-shaped JSON) and sends its webhooks. */
  upsertOrder(shop: string, order: RestOrder, options?: UpsertOrderOptions): Promise<Delivery[]>;
  /**
   * The merchant uninstalls the app: the shop's tokens stop working (the Admin API answers 401)
   * and app/uninstalled (the Shop resource) is sent, unless `deliver` is false.
   */
  uninstallShop(shop: string, options?: { deliver?: boolean }): Promise<Delivery[]>;
  /** Sends a topic about the shop itself (shop/update) with the Shop resource. */
  sendShopWebhook(shop: string, topic: string): Promise<Delivery[]>;
}

const INVALID_TOKEN =
  "[API] Invalid API key or access token (unrecognized login or wrong password)";

/**
 * A stand-in for the Shopify Admin API, for tests, benchmarks and `npm start`: Admin GraphQL
 * (real `graphql` execution, cost metering, THROTTLED), webhook subscriptions and signed webhook
 * delivery, and a control API under `/_standin` to change a shop's orders.
 */
export function createShopifyStandInApp(options: ShopifyStandInOptions): ShopifyStandInApp {
  const state = new ShopifyStandInState({
    now: options.now ?? Date.now,
    nonExpiringRefusedFrom: options.nonExpiringRefusedFrom ?? null,
  });
  for (const { shop, ...install } of options.shops ?? []) state.installShop(shop, install);
  const schema = buildStandInSchema(STAND_IN_MODULES);
  const apiVersion = options.apiVersion ?? "2026-10";
  const app = new Hono();

  const requireShop = (domain: string) => {
    const shop = state.shop(domain);
    if (!shop) throw new StandInNotFound(`shop ${domain} is not installed in the stand-in`);
    return shop;
  };

  const upsertOrder: ShopifyStandInApp["upsertOrder"] = async (domain, order, o = {}) => {
    const shop = requireShop(domain);
    const { created } = shop.putOrder(order);
    if (o.deliver === false) return [];
    const topics = o.topics ?? [created ? "orders/create" : "orders/updated"];
    const out: Delivery[] = [];
    for (const topic of topics) {
      out.push(
        ...(await deliverWebhook({
          shop,
          topic,
          payload: order,
          secret: options.apiSecret,
          apiVersion,
          ...(options.appSubscriptions ? { appSubscriptions: options.appSubscriptions } : {}),
          ...(options.webhookFetch ? { fetch: options.webhookFetch } : {}),
        })),
      );
    }
    return out;
  };

  const sendShopWebhook: ShopifyStandInApp["sendShopWebhook"] = (domain, topic) => {
    const shop = requireShop(domain);
    return deliverWebhook({
      shop,
      topic,
      payload: shop.shopResource(),
      secret: options.apiSecret,
      apiVersion,
      ...(options.appSubscriptions ? { appSubscriptions: options.appSubscriptions } : {}),
      ...(options.webhookFetch ? { fetch: options.webhookFetch } : {}),
    });
  };

  const uninstallShop: ShopifyStandInApp["uninstallShop"] = async (domain, o = {}) => {
    const shop = requireShop(domain);
    shop.uninstalled = true;
    shop.refreshTokens.clear();
    if (o.deliver === false) return [];
    return sendShopWebhook(domain, "app/uninstalled");
  };

  app.onError((error, c) => {
    if (error instanceof StandInNotFound) return c.json({ errors: error.message }, 404);
    if (error instanceof SyntaxError) return c.json({ errors: "body is not JSON" }, 400);
    return c.json({ errors: `stand-in failure: ${error.message}` }, 500);
  });

  // -- OAuth (authorize → callback with code → access token) -------------------------------
  app.route(
    "/",
    standInOAuthRoutes(state, {
      apiSecret: options.apiSecret,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      tokenTtlSeconds: options.tokenTtlSeconds ?? 3600,
    }),
  );

  // -- the admin: the embedded app's frame and App Bridge ---------------------------------
  if (options.appUrl && options.apiKey) {
    app.route(
      "/",
      standInAdminRoutes(state, {
        apiKey: options.apiKey,
        apiSecret: options.apiSecret,
        appUrl: options.appUrl,
      }),
    );
  }

  // -- Admin GraphQL ---------------------------------------------------------------------
  app.post("/admin/api/:version/graphql.json", async (c) => {
    state.counters.graphqlRequests++;
    const token = c.req.header("x-shopify-access-token") ?? "";
    // The admin client's fetch rewrite keeps the shop's domain in X-Forwarded-Host.
    const host = (c.req.header("x-forwarded-host") ?? c.req.header("host") ?? "").split(":")[0];
    const shop = (host ? state.shop(host) : undefined) ?? state.shopByToken(token);
    if (!shop?.acceptsToken(token)) {
      state.counters.unauthorized++;
      return c.json({ errors: INVALID_TOKEN }, 401);
    }
    const answer = await runGraphql(schema, shop, await c.req.json(), {
      throttledStatus: options.throttledStatus ?? 200,
    });
    if (answer.throttled) state.counters.throttled++;
    return c.json(answer.body, answer.status);
  });

  // -- control API (not Shopify's: how tests and demos change a shop) ----------------------
  app.post("/_standin/shops", async (c) => {
    const body = (await c.req.json()) as { shop?: unknown } & ShopInstallOptions;
    if (typeof body.shop !== "string" || !/^[a-z0-9][a-z0-9-]*\.myshopify\.com$/.test(body.shop))
      return c.json({ errors: "shop: a *.myshopify.com domain is required" }, 400);
    const shop = state.installShop(body.shop, body);
    return c.json({ shop: shop.domain, accessToken: shop.accessToken, scopes: shop.scopes }, 201);
  });

  app.post("/_standin/shops/:shop/orders", async (c) => {
    const body = (await c.req.json()) as { order?: unknown } & UpsertOrderOptions;
    const order = body.order as RestOrder | undefined;
    if (!order || typeof order !== "object" || order.id === undefined || !order.updated_at)
      return c.json(
        { errors: "order: a REST-shaped order with id and updated_at is required" },
        400,
      );
    const deliveries = await upsertOrder(c.req.param("shop"), order, body);
    return c.json({ deliveries });
  });

  /** The merchant uninstalls the app (`{"deliver": false}`: without the app/uninstalled webhook). */
  app.post("/_standin/shops/:shop/uninstall", async (c) => {
    const body = (await c.req.json().catch(() => ({}))) as { deliver?: unknown };
    const deliveries = await uninstallShop(c.req.param("shop"), {
      deliver: body.deliver !== false,
    });
    return c.json({ uninstalled: true, deliveries });
  });

  app.get("/_standin/shops/:shop/orders", (c) =>
    c.json({ orders: [...requireShop(c.req.param("shop")).orders.values()] }),
  );

  app.get("/_standin/shops/:shop/deliveries", (c) =>
    c.json({ deliveries: requireShop(c.req.param("shop")).deliveries }),
  );

  /** Spends points of the shop's bucket, as another app of the same shop would. */
  app.post("/_standin/shops/:shop/drain", async (c) => {
    const body = (await c.req.json()) as { points?: unknown };
    const shop = requireShop(c.req.param("shop"));
    shop.bucket.drain(Number(body.points ?? shop.bucket.maximumAvailable));
    return c.json({ throttleStatus: shop.bucket.status() });
  });

  return {
    app,
    state,
    installShop: (shop, install) => state.installShop(shop, install),
    upsertOrder,
    uninstallShop,
    sendShopWebhook,
  };
}

class StandInNotFound extends Error {}
