import { createHmac, randomBytes } from "node:crypto";
import { type Context, Hono } from "hono";
import { verifySessionToken } from "./session-token.ts";
import type { ShopifyStandInState, StandInShop } from "./state.ts";

export interface StandInOAuthOptions {
  /** The app's client ID (`client_id`); any is accepted when unset. */
  apiKey?: string;
  /** The app's client secret: signs the callback query and authenticates the token request. */
  apiSecret: string;
  /** The life of an expiring offline access token (`expires_in`). */
  tokenTtlSeconds: number;
}

/** An authorization code lives one minute and is used once, as Shopify's do. */
const CODE_TTL_MS = 60_000;

/**
 * Shopify's query-string HMAC: every parameter but `hmac`, sorted by name, form-encoded and
 * joined by `&`, HMAC-SHA256 with the client secret, hex (the rule `@shopify/shopify-api`
 * checks in `utils.validateHmac`).
 */
export function signOAuthQuery(params: Record<string, string>, secret: string): string {
  const query = new URLSearchParams();
  for (const key of Object.keys(params).sort((a, b) => a.localeCompare(b))) {
    if (key !== "hmac" && key !== "signature") query.append(key, params[key] ?? "");
  }
  const message = query.toString().replace(/\+/g, "%20");
  return createHmac("sha256", secret).update(message).digest("hex");
}

/**
 * The stand-in's OAuth: `GET /admin/oauth/authorize` (the merchant approves at once and is sent
 * back to `redirect_uri` with `code`, `hmac`, `host`, `shop`, `state` and `timestamp`) and
 * `POST /admin/oauth/access_token` (code → offline token). The shop is the request's host, or
 * X-Forwarded-Host when a test or the admin fetch rewrite sends `https://{shop}` here.
 */
/** Shopify's answer for an expiring offline token (a new refresh token lives 90 days). */
function expiringAnswer(
  issued: { access: string; refresh: string },
  shop: StandInShop,
  ttlSeconds: number,
) {
  const refreshEnd = shop.refreshTokens.get(issued.refresh) ?? shop.now();
  return {
    access_token: issued.access,
    scope: shop.scopes.join(","),
    expires_in: ttlSeconds,
    refresh_token: issued.refresh,
    refresh_token_expires_in: Math.max(0, Math.floor((refreshEnd - shop.now()) / 1000)),
  };
}

/**
 * Loses a refresh or migration answer Shopify has already acted on, when the test asked for it:
 * a 502 (`dropRefreshAnswers`), or the connection reset before any byte of the answer
 * (`resetRefreshAnswers`). Null: answer normally.
 */
function loseAnswer(c: Context, shop: StandInShop): Response | null {
  if (shop.dropRefreshAnswers > 0) {
    shop.dropRefreshAnswers--;
    return c.json({ errors: "the answer was lost" }, 502);
  }
  if (shop.resetRefreshAnswers > 0) {
    shop.resetRefreshAnswers--;
    const incoming = (c.env as { incoming?: { socket?: { destroy(): void } } } | undefined)
      ?.incoming;
    incoming?.socket?.destroy();
    return c.body(null, 502);
  }
  return null;
}

export function standInOAuthRoutes(state: ShopifyStandInState, options: StandInOAuthOptions) {
  const codes = new Map<string, { shop: string; expiresAt: number }>();
  const app = new Hono();
  const shopOf = (c: { req: { header(name: string): string | undefined } }) =>
    (c.req.header("x-forwarded-host") ?? c.req.header("host") ?? "").split(":")[0] ?? "";

  app.get("/admin/oauth/authorize", (c) => {
    // A browser sent here by the connector's local-development redirect names the shop in the
    // query (it cannot send X-Forwarded-Host); everything else arrives as https://{shop}.
    const host = shopOf(c);
    const shop = host.endsWith(".myshopify.com") ? host : (c.req.query("shop") ?? "");
    if (!/^[a-z0-9][a-z0-9-]*\.myshopify\.com$/.test(shop))
      return c.json({ errors: "the shop is the request's host: a *.myshopify.com domain" }, 400);
    const clientId = c.req.query("client_id") ?? "";
    if (options.apiKey && clientId !== options.apiKey)
      return c.json({ errors: "Oauth error invalid_request: The client_id is invalid" }, 400);
    const redirectUri = c.req.query("redirect_uri") ?? "";
    if (!/^https?:\/\//.test(redirectUri))
      return c.json({ errors: "Oauth error invalid_request: The redirect_uri is missing" }, 400);
    // Installing is the merchant's approval: the shop exists from now on, with a fresh token.
    const known = state.shop(shop);
    const standIn = known ?? state.installShop(shop);
    // Scopes the merchant granted an installed app stay granted when it asks again (Shopify
    // takes an optional scope back only through appRevokeAccessScopes); after an uninstall the
    // approval starts afresh.
    const kept = known && !known.uninstalled ? standIn.scopes : [];
    standIn.reinstall();
    const scopes = (c.req.query("scope") ?? "").split(",").filter(Boolean);
    if (scopes.length > 0) standIn.scopes = [...new Set([...scopes, ...kept])];
    const code = randomBytes(16).toString("hex");
    codes.set(code, { shop, expiresAt: Date.now() + CODE_TTL_MS });
    const params: Record<string, string> = {
      code,
      host: Buffer.from(`admin.shopify.com/store/${shop.split(".")[0]}`).toString("base64url"),
      shop,
      state: c.req.query("state") ?? "",
      timestamp: String(Math.floor(Date.now() / 1000)),
    };
    params.hmac = signOAuthQuery(params, options.apiSecret);
    const target = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
    return c.redirect(target.toString(), 302);
  });

  app.post("/admin/oauth/access_token", async (c) => {
    const shop = shopOf(c);
    const body = (await c.req.json().catch(() => ({}))) as Record<string, unknown>;
    const grant = typeof body.code === "string" ? codes.get(body.code) : undefined;
    if (typeof body.code === "string") codes.delete(body.code);
    if (
      body.client_secret !== options.apiSecret ||
      (options.apiKey !== undefined && body.client_id !== options.apiKey)
    ) {
      return c.json(
        { error: "invalid_client", error_description: "Client credentials are invalid" },
        400,
      );
    }
    const standInShop = state.shop(shop);
    // Refreshing an expiring offline token: the refresh token is rotated, and the one used
    // stays valid until the new one is used (so a lost answer can be retried).
    if (body.grant_type === "refresh_token") {
      const used = typeof body.refresh_token === "string" ? body.refresh_token : "";
      if (!standInShop?.acceptsRefreshToken(used)) {
        if (standInShop) standInShop.refusedRefreshes++;
        return c.json(
          { error: "invalid_grant", error_description: "The refresh token is invalid or expired" },
          400,
        );
      }
      const issued = standInShop.issueExpiring(options.tokenTtlSeconds, used);
      standInShop.refreshes++;
      await standInShop.heldAnswer();
      const lost = loseAnswer(c, standInShop);
      if (lost) return lost;
      return c.json(expiringAnswer(issued, standInShop, options.tokenTtlSeconds));
    }
    // Shopify-managed installation: the admin's session token (id token) for an offline token.
    if (
      body.grant_type === "urn:ietf:params:oauth:grant-type:token-exchange" &&
      body.subject_token_type === "urn:ietf:params:oauth:token-type:id_token"
    ) {
      const subject = typeof body.subject_token === "string" ? body.subject_token : "";
      const tokenShop = await verifySessionToken(subject, options);
      if (!standInShop || tokenShop !== shop) {
        return c.json(
          { error: "invalid_subject_token", error_description: "The subject token is invalid" },
          400,
        );
      }
      if (body.requested_token_type !== "urn:shopify:params:oauth:token-type:offline-access-token")
        return c.json(
          { error: "invalid_request", error_description: "Only offline tokens in the stand-in" },
          400,
        );
      standInShop.tokenExchanges++;
      if (body.expiring === "1") {
        const issued = standInShop.issueExpiring(options.tokenTtlSeconds);
        return c.json(expiringAnswer(issued, standInShop, options.tokenTtlSeconds));
      }
      return c.json({ access_token: standInShop.accessToken, scope: standInShop.scopes.join(",") });
    }
    // Migrating a non-expiring offline token (token exchange, `expiring: '1'`): the original
    // token keeps working meanwhile, so a lost answer is retried with it.
    if (body.grant_type === "urn:ietf:params:oauth:grant-type:token-exchange") {
      const subject = typeof body.subject_token === "string" ? body.subject_token : "";
      const issued = standInShop?.migrate(subject, options.tokenTtlSeconds);
      if (!standInShop || !issued) {
        return c.json(
          { error: "invalid_subject_token", error_description: "The subject token is invalid" },
          400,
        );
      }
      standInShop.migrations++;
      const lost = loseAnswer(c, standInShop);
      if (lost) return lost;
      return c.json(expiringAnswer(issued, standInShop, options.tokenTtlSeconds));
    }
    if (!grant || grant.shop !== shop || grant.expiresAt < Date.now()) {
      return c.json(
        {
          error: "invalid_request",
          error_description: "The authorization code was not found or was already used",
        },
        400,
      );
    }
    if (!standInShop) return c.json({ errors: "shop not installed" }, 404);
    if (body.expiring === "1" || body.expiring === 1 || body.expiring === true) {
      const issued = standInShop.issueExpiring(options.tokenTtlSeconds);
      return c.json(expiringAnswer(issued, standInShop, options.tokenTtlSeconds));
    }
    return c.json({ access_token: standInShop.accessToken, scope: standInShop.scopes.join(",") });
  });

  return app;
}
