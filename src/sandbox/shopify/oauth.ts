import { createHmac, randomBytes } from "node:crypto";
import { Hono } from "hono";
import type { ShopifyStandInState } from "./state.ts";

export interface StandInOAuthOptions {
  /** The app's client ID (`client_id`); any is accepted when unset. */
  apiKey?: string;
  /** The app's client secret: signs the callback query and authenticates the token request. */
  apiSecret: string;
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
    const standIn = state.shop(shop) ?? state.installShop(shop);
    const scopes = (c.req.query("scope") ?? "").split(",").filter(Boolean);
    if (scopes.length > 0) standIn.scopes = scopes;
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
    if (!grant || grant.shop !== shop || grant.expiresAt < Date.now()) {
      return c.json(
        {
          error: "invalid_request",
          error_description: "The authorization code was not found or was already used",
        },
        400,
      );
    }
    const standIn = state.shop(shop);
    if (!standIn) return c.json({ errors: "shop not installed" }, 404);
    return c.json({ access_token: standIn.accessToken, scope: standIn.scopes.join(",") });
  });

  return app;
}
