import {
  BotActivityDetected,
  CookieNotFound,
  InvalidHmacError,
  InvalidOAuthError,
  type Session,
} from "@shopify/shopify-api";
import { type Context, Hono } from "hono";
import { NONCE, type SecureHeadersVariables, secureHeaders } from "hono/secure-headers";
import type { Logger } from "pino";
import { errorText } from "../../lib/redact.ts";
import type { Shopify } from "../../shopify/api.ts";
import type { OAuthStateStore } from "../../shopify/install/index.ts";
import type { ShopRepository } from "../../store/index.ts";
import { MessagePage } from "../settings/pages/message-page.tsx";
import { validShop } from "./embedded.ts";
import type { ShopSessionCookie } from "./shop-session-cookie.ts";

export const CALLBACK_PATH = "/shopify/callback";

export interface OAuthRouteDeps {
  shopify: Shopify;
  states: OAuthStateStore;
  cookie: ShopSessionCookie;
  /** Whether the cookie's installation is still the shop's current one. */
  shops: Pick<ShopRepository, "getShop">;
  /** APP_URL is https: its pages send HSTS (never over plain http in development). */
  appUrlIsHttps: boolean;
  logger: Logger;
  /**
   * Local development only (SHOPIFY_ADMIN_URL): the stand-in Shopify's origin. The browser's
   * redirect to https://{shop}/admin/oauth/authorize goes there instead, naming the shop.
   */
  standInUrl?: string;
  /** Stores the session and sets the shop up (subscriptions, shop currency). */
  /** Records the installation; answers its installedAt, which the settings cookie is bound to. */
  onInstalled(session: Session): Promise<string>;
}

/**
 * GET /shopify/install?shop=… and GET /shopify/callback: Shopify's authorization-code grant for
 * an offline token (`@shopify/shopify-api` auth.begin / auth.callback, web-api adapter), for
 * use outside the Shopify admin. Inside it the app is installed by Shopify (managed
 * installation) and the settings route exchanges the admin's session token instead.
 *
 * The callback refuses, in this order: a bad shop domain (400), a bad or stale HMAC (401), a
 * state the connector did not issue for this shop or already used (403), and a state that does
 * not match the browser's signed state cookie (403, the library's check).
 */
export function oauthRoutes(deps: OAuthRouteDeps) {
  const { shopify, states, cookie, logger } = deps;
  const app = new Hono<{ Variables: SecureHeadersVariables }>();

  // The install's pages (its refusals) are framed by nobody and run nothing but their own
  // style, as the settings pages outside the admin. Mounted at the root: each path is named,
  // so the headers reach no other route of the web app.
  const headers = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      styleSrc: [NONCE],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
    },
    referrerPolicy: "same-origin",
    xFrameOptions: "DENY",
    strictTransportSecurity: deps.appUrlIsHttps ? "max-age=15552000; includeSubDomains" : false,
  });
  app.use("/", headers);
  app.use("/shopify/*", headers);

  const refuse = (
    c: Context<{ Variables: SecureHeadersVariables }>,
    status: 400 | 401 | 403 | 410 | 502,
    title: string,
    message: string,
  ) =>
    c.html(
      `<!doctype html>${(
        <MessagePage title={title} message={message} nonce={c.get("secureHeadersNonce") ?? ""} />
      ).toString()}`,
      status,
    );

  // Shopify opens the app URL with ?shop=…: a merchant with a session for that shop goes to the
  // settings, anyone else through OAuth (which also proves they are the shop's staff).
  // Inside the admin (Shopify-managed installation) the frame URL carries `embedded=1` and a
  // session token: the settings route authenticates it and installs by token exchange.
  app.get("/", async (c) => {
    if (c.req.query("embedded") === "1") {
      return c.redirect(`/settings${new URL(c.req.url).search}`, 302);
    }
    const shop = validShop(shopify, c.req.query("shop"));
    if (!shop) return c.redirect("/settings", 302);
    // Only a session for the shop's current installation: after an uninstall or a reinstall
    // the old cookie would lead to a settings page that refuses it.
    if ((await cookie.currentShop(c, deps.shops))?.shop === shop) {
      return c.redirect("/settings", 302);
    }
    return c.redirect(`/shopify/install?shop=${encodeURIComponent(shop)}`, 302);
  });

  app.get("/shopify/install", async (c) => {
    const shop = validShop(shopify, c.req.query("shop"));
    if (!shop) {
      return refuse(
        c,
        400,
        "Invalid shop address",
        "The shop must be your store's myshopify.com address, for example my-store.myshopify.com.",
      );
    }
    const response = await shopify.auth.begin({
      shop,
      callbackPath: CALLBACK_PATH,
      isOnline: false,
      rawRequest: c.req.raw,
    });
    const location = response.headers.get("location");
    if (!location) {
      // Shopify's library answers 410 to a client it takes for a bot (by its User-Agent).
      logger.warn(
        {
          shop,
          status: response.status,
          userAgent: c.req.header("user-agent")?.slice(0, 120) ?? null,
        },
        "install refused: the client looks like a bot to Shopify's library",
      );
      return refuse(
        c,
        410,
        "Install from a browser",
        "This install link was opened by a program that looks like a bot (a link preview, a crawler or a script), so the install did not start. Open it in a web browser, or start the install from your Shopify admin.",
      );
    }
    const authorize = new URL(location);
    const state = authorize.searchParams.get("state");
    if (state) await states.remember(state, shop);
    logger.info({ shop }, "install started; redirecting to Shopify");
    if (!deps.standInUrl) return response;
    const local = new URL(`${authorize.pathname}${authorize.search}`, deps.standInUrl);
    local.searchParams.set("shop", shop);
    const headers = new Headers(response.headers);
    headers.set("location", local.toString());
    return new Response(null, { status: response.status, headers });
  });

  app.get(CALLBACK_PATH, async (c) => {
    const url = new URL(c.req.url);
    const shop = validShop(shopify, url.searchParams.get("shop") ?? undefined);
    if (!shop) {
      return refuse(
        c,
        400,
        "Invalid shop address",
        "The callback does not name a myshopify.com shop.",
      );
    }
    const log = logger.child({ shop });
    let hmacValid = false;
    try {
      hmacValid = await shopify.utils.validateHmac(url.searchParams);
    } catch (error) {
      if (!(error instanceof InvalidHmacError)) throw error;
    }
    if (!hmacValid) {
      log.warn("install callback refused: bad or stale HMAC");
      return refuse(
        c,
        401,
        "Install link not signed by Shopify",
        "This request was not signed by Shopify or is too old. Start the install again from your Shopify admin.",
      );
    }
    const state = url.searchParams.get("state") ?? "";
    if (!(await states.consume(state, shop))) {
      log.warn("install callback refused: unknown, reused or expired state");
      return refuse(
        c,
        403,
        "Install link expired",
        "This install link was already used or has expired. Start the install again from your Shopify admin.",
      );
    }
    let session: Session;
    let headers: Headers;
    try {
      // An expiring offline token: from 2027-01-01 Shopify refuses non-expiring ones.
      const result = await shopify.auth.callback<Headers>({
        rawRequest: c.req.raw,
        expiring: true,
      });
      session = result.session;
      headers = result.headers;
    } catch (error) {
      if (
        error instanceof InvalidOAuthError ||
        error instanceof CookieNotFound ||
        error instanceof BotActivityDetected
      ) {
        log.warn({ reason: error.name }, "install callback refused by the OAuth checks");
        return refuse(
          c,
          403,
          "Install could not be verified",
          "This browser did not start this install (its state cookie is missing or different). Start the install again from your Shopify admin.",
        );
      }
      log.error({ err: { message: errorText(error) } }, "token exchange failed");
      return refuse(
        c,
        502,
        "Shopify did not complete the install",
        "Shopify did not hand over access for this shop. Try the install again in a minute.",
      );
    }
    const installedAt = await deps.onInstalled(session);
    await cookie.set(c, session.shop, installedAt);
    for (const [name, value] of headers.entries()) {
      if (name.toLowerCase() === "set-cookie") c.header("set-cookie", value, { append: true });
    }
    log.info("app installed");
    return c.redirect("/settings", 302);
  });

  return app;
}
