import type { Context, Hono } from "hono";
import { csrf } from "hono/csrf";
import { NONCE, type SecureHeadersVariables, secureHeaders } from "hono/secure-headers";
import type { Logger } from "pino";
import type { ClaimsSettings } from "../../features/claims/settings.ts";
import type { RegistrationEvents } from "../../features/registrations/settings.ts";
import { errorResponse } from "../../lib/http-errors.ts";
import type { SettingsService } from "../../settings/index.ts";
import type { Shopify } from "../../shopify/api.ts";
import type { ShopRecord, ShopRepository } from "../../store/index.ts";
import type { ShopDomain } from "../../sync/source-order.ts";
import {
  type EmbeddedConfig,
  type EmbeddedParams,
  embeddedParams,
  frameAncestors,
  isEmbeddedRequest,
  sessionTokenOf,
  shopOfSessionToken,
} from "../install/embedded.ts";
import type { ShopSessionCookie } from "../install/shop-session-cookie.ts";
import { BouncePage } from "./pages/bounce-page.tsx";
import { MessagePage } from "./pages/message-page.tsx";

export interface SettingsRouteDeps {
  service: SettingsService;
  /** The Claims section (the provider's events); absent where the composition has none. */
  claims?: ClaimsSettings;
  /** The provider's registration events (the Registrations tab); absent where the composition has none. */
  registrationEvents?: RegistrationEvents;
  /** Decodes Shopify's session token (embedded in the admin: `Authorization: Bearer …`). */
  shopify: Shopify;
  cookie: ShopSessionCookie;
  shops: ShopRepository;
  /** APP_URL's origin: the only origin allowed to post the forms (CSRF). */
  appOrigin: string;
  logger: Logger;
  embedded: EmbeddedConfig;
  /**
   * Shopify-managed installation: the shop of a valid session token that the connector does not
   * hold a working token for (never installed, uninstalled, or its refresh token refused) gets
   * one by token exchange (id token → expiring offline token). Answers the installed shop, or
   * a message when Shopify refused the exchange.
   */
  installByTokenExchange(
    shop: ShopDomain,
    sessionToken: string,
  ): Promise<{ ok: true; shop: ShopRecord } | { ok: false; message: string }>;
}

/** Inside the Shopify admin: the frame's shop and host, and the session token of the request. */
export interface EmbeddedSession extends EmbeddedParams {
  token: string;
}

export type Env = {
  Variables: SecureHeadersVariables & { shop: ShopRecord; embedded: EmbeddedSession | undefined };
};

export const html = (
  c: Context,
  page: { toString(): string },
  status: 200 | 400 | 401 | 403 | 404 | 413 | 502 | 503 = 200,
) => c.html(`<!doctype html>${page.toString()}`, status);

/**
 * What links keep to stay inside the Shopify admin (`embedded`, `shop`, `host`), or undefined
 * outside it (the cookie is enough there). A request without the admin's `host` (App Bridge's
 * own fetch) has nothing to keep.
 */
export const navOf = (c: Context<Env>): EmbeddedParams | undefined => {
  const embedded = c.get("embedded");
  return embedded?.host ? { shop: embedded.shop, host: embedded.host } : undefined;
};

/**
 * What every settings request passes before its route: security headers with a per-response
 * nonce and `frame-ancestors` limited to the shop and the Shopify admin, the CSRF origin check,
 * forms only, and who is asking (Shopify's session token inside the admin, the session cookie
 * outside it), which sets `shop` (and `embedded`) for the routes.
 */
export function guardSettings(app: Hono<Env>, deps: SettingsRouteDeps): void {
  const { cookie, shops } = deps;
  /**
   * Who may frame a page, one policy per response. A request made inside the Shopify admin
   * (`embedded=1`, or App Bridge's session token) may be framed by its shop's admin and
   * admin.shopify.com alone: `frame-ancestors` names them and no X-Frame-Options contradicts it.
   * The shop is the authenticated one, or, for the bounce and sign-in pages before that, the
   * `shop` of the query when it is a *.myshopify.com domain. Any other page (the standalone
   * page with the cookie, a page for no shop) may be framed by nobody: `frame-ancestors 'none'`
   * and X-Frame-Options DENY for browsers that know only that. Set after the route, since the
   * shop is known only once the request is authenticated.
   */
  app.use("*", async (c, next) => {
    await next();
    const csp = c.res.headers.get("content-security-policy");
    if (!csp) return;
    const shop = isEmbeddedRequest(c)
      ? (c.get("shop")?.shop ?? embeddedParams(deps.shopify, c)?.shop ?? null)
      : null;
    c.res.headers.set(
      "content-security-policy",
      `${csp}; frame-ancestors ${frameAncestors(deps.embedded, shop)}`,
    );
    if (shop) c.res.headers.delete("x-frame-options");
    else c.res.headers.set("x-frame-options", "DENY");
  });
  /**
   * Never from a cache: the back button after a save would otherwise show the page as it was
   * before (an old state, old values in its forms, which a save would write back), and a shop's
   * settings stay off shared disks. The page reloads itself when restored from the back-forward
   * cache (layout.tsx).
   */
  app.use("*", async (c, next) => {
    await next();
    c.res.headers.set("cache-control", "no-store");
  });
  const cdn = (url: string | null) => (url ? [new URL(url).origin] : []);
  app.use(
    "*",
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        // App Bridge and Polaris from Shopify's CDN (the stand-in's App Bridge in development).
        scriptSrc: [
          NONCE,
          ...new Set([...cdn(deps.embedded.appBridgeUrl), ...cdn(deps.embedded.polarisUrl)]),
        ],
        styleSrc: [NONCE, ...cdn(deps.embedded.polarisUrl)],
        fontSrc: ["'self'", ...cdn(deps.embedded.polarisUrl)],
        imgSrc: ["'self'", "data:", ...cdn(deps.embedded.polarisUrl)],
        connectSrc: ["'self'", ...cdn(deps.embedded.polarisUrl)],
        formAction: ["'self'"],
        baseUri: ["'none'"],
      },
      referrerPolicy: "same-origin",
      // Set per response above.
      xFrameOptions: false,
      // HSTS only where the app is served over https (production); over plain http in
      // development it would pin the browser to https for a host that has none.
      strictTransportSecurity: deps.appOrigin.startsWith("https://")
        ? "max-age=15552000; includeSubDomains"
        : false,
    }),
  );
  app.use("*", csrf({ origin: deps.appOrigin }));
  /** Outside the admin: an installed shop whose cookie was issued for its current installation. */
  const shopOfCookie = (c: Context<Env>) => cookie.currentShop(c, shops);

  // Forms only: any other body (JSON, text, a missing type) would be read as an empty form,
  // and the CSRF check covers form types alone.
  app.use("*", async (c, next) => {
    if (c.req.method !== "POST") return next();
    const type = (c.req.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
    if (type === "application/x-www-form-urlencoded" || type === "multipart/form-data") {
      return next();
    }
    return errorResponse(
      c,
      415,
      "unsupported_media_type",
      "settings forms are sent as application/x-www-form-urlencoded or multipart/form-data",
      [{ path: "headers.content-type", message: type ? `${type} is not a form` : "missing" }],
    );
  });

  /**
   * Who is asking. Inside the Shopify admin every request carries Shopify's session token (no
   * cookie: the frame is a third-party context), and a shop the connector holds no working
   * token for is installed on the spot by token exchange. Outside it, the cookie set by the
   * OAuth callback. A page load in the admin whose token is missing or expired gets the bounce
   * page, which asks App Bridge for a fresh token and loads the page again with it.
   */
  app.use("*", async (c, next) => {
    const token = isEmbeddedRequest(c) ? await sessionTokenOf(c) : null;
    if (token) {
      const domain = await shopOfSessionToken(deps.shopify, token);
      const params = embeddedParams(deps.shopify, c);
      if (domain && (!params || params.shop === domain)) {
        const installed = await deps.installByTokenExchange(domain, token);
        if (!installed.ok) {
          return html(
            c,
            <MessagePage
              nonce={c.get("secureHeadersNonce") ?? ""}
              title="Shopify did not complete the install"
              message={installed.message}
            />,
            401,
          );
        }
        c.set("shop", installed.shop);
        c.set("embedded", params ? { ...params, token } : { shop: domain, host: "", token });
        return next();
      }
    }
    const shop = token ? null : await shopOfCookie(c);
    const params = embeddedParams(deps.shopify, c);
    if (!shop && params && c.req.method === "GET" && c.req.query("bounced") !== "1") {
      return html(
        c,
        <BouncePage
          apiKey={deps.embedded.apiKey}
          appBridgeUrl={deps.embedded.appBridgeUrl}
          nonce={c.get("secureHeadersNonce") ?? ""}
        />,
      );
    }
    if (!shop) {
      // A form sent after the session ended (the page checks first when it can; this is the
      // page without its script): say that nothing was saved and how to keep what was typed.
      const sent = c.req.method === "POST";
      return html(
        c,
        <MessagePage
          nonce={c.get("secureHeadersNonce") ?? ""}
          title={sent ? "Your session has ended" : "Sign in through Shopify"}
          message={
            sent
              ? "Nothing was saved. Go back to the page to keep what you typed, open the app again from your Shopify admin (Apps → Order sync) in another tab, then send the form again."
              : "Open the app from your Shopify admin (Apps → Order sync) to see its settings."
          }
        />,
        401,
      );
    }
    c.set("shop", shop);
    await next();
  });
}
