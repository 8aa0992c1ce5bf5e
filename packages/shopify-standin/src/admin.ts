import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { html, raw } from "hono/html";
import { signOAuthQuery } from "./oauth.ts";
import { mintSessionToken } from "./session-token.ts";
import type { ShopifyStandInState } from "./state.ts";

export interface StandInAdminOptions {
  /** The app's client ID: the session tokens' audience, checked against the page's meta tag. */
  apiKey: string;
  /** The app's client secret: signs the session tokens and the frame URL. */
  apiSecret: string;
  /** The app's URL (`application_url`): what the admin frames. */
  appUrl: string;
}

const APP_BRIDGE = `(() => {
  const meta = document.querySelector('meta[name="shopify-api-key"]');
  const apiKey = meta ? meta.getAttribute("content") : null;
  const params = new URLSearchParams(location.search);
  const pending = new Map();
  let sequence = 0;
  window.addEventListener("message", (event) => {
    const data = event.data;
    if (event.source !== window.parent || !data) return;
    if (data.type !== "standin:id-token" && data.type !== "standin:scopes") return;
    const waiting = pending.get(data.id);
    if (!waiting) return;
    pending.delete(data.id);
    if (data.error) waiting.reject(new Error(data.error));
    else if (data.type === "standin:id-token") waiting.resolve(data.token);
    else waiting.resolve(data.answer);
  });
  const idToken = () =>
    new Promise((resolve, reject) => {
      if (window.parent === window) return reject(new Error("App Bridge: not inside the admin"));
      const id = ++sequence;
      pending.set(id, { resolve, reject });
      window.parent.postMessage({ type: "standin:id-token", id, apiKey }, "*");
    });
  const nativeFetch = window.fetch.bind(window);
  window.fetch = async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input), location.href);
    if (url.origin !== location.origin) return nativeFetch(input, init);
    const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
    if (!headers.has("authorization")) headers.set("authorization", "Bearer " + (await idToken()));
    return nativeFetch(input, { ...init, headers });
  };
  // The Scopes API: the admin asks the merchant (the stand-in grants) and answers as Shopify does.
  const askScopes = (action, scopes) =>
    new Promise((resolve, reject) => {
      if (window.parent === window) return reject(new Error("App Bridge: not inside the admin"));
      const id = ++sequence;
      pending.set(id, { resolve, reject });
      window.parent.postMessage({ type: "standin:scopes", id, apiKey, action, scopes }, "*");
    });
  const scopes = {
    query: () => askScopes("query", []),
    request: (list) => askScopes("request", list),
    revoke: (list) => askScopes("revoke", list),
  };
  window.shopify = { config: { apiKey, shop: params.get("shop"), host: params.get("host") }, idToken, scopes };
})();`;

const ADMIN_STYLES = `
* { box-sizing: border-box; }
body { margin:0; font: 13px/1.4 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, sans-serif;
  background:#1a1a1a; color:#303030; height:100vh; display:grid; grid-template-rows:56px 1fr; }
.top { display:flex; align-items:center; gap:16px; padding:0 16px; color:#e3e3e3; }
.top strong { color:#fff; font-size:14px; }
.top .search { flex:1; max-width:520px; margin:0 auto; background:#303030; border-radius:8px;
  padding:7px 12px; color:#b5b5b5; }
.frame { display:grid; grid-template-columns:240px 1fr; background:#f1f1f1;
  border-radius:12px 12px 0 0; overflow:hidden; }
nav { padding:12px 8px; background:#ebebeb; }
nav a { display:block; padding:6px 8px; border-radius:8px; color:#303030; text-decoration:none; }
nav a.active { background:#fafafa; font-weight:600; }
nav .group { margin-top:16px; color:#616161; font-weight:600; padding:6px 8px; }
iframe { border:0; width:100%; height:100%; background:#f1f1f1; }`;

/**
 * The stand-in Shopify admin: `GET /store/{handle}/apps/{app}` is what a merchant opens in
 * admin.shopify.com. Opening it installs the app if the shop does not have it yet (Shopify-managed
 * installation: the scopes come from the app's TOML, nothing is asked of the app) and frames the
 * app's URL as Shopify does: `embedded=1`, `hmac`, `host`, `id_token`, `locale`, `session`,
 * `shop`, `timestamp`. The page answers the frame's session-token requests (postMessage from the
 * stand-in App Bridge), only for the app's origin.
 */
export function standInAdminRoutes(state: ShopifyStandInState, options: StandInAdminOptions) {
  const app = new Hono();
  const appOrigin = new URL(options.appUrl).origin;

  app.get("/app-bridge.js", (c) =>
    c.body(APP_BRIDGE, 200, {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "no-store",
    }),
  );

  app.get("/store/:handle/apps/:app?", async (c) => {
    const handle = c.req.param("handle");
    if (!/^[a-z0-9][a-z0-9-]*$/.test(handle)) return c.text("unknown store", 404);
    const shop = `${handle}.myshopify.com`;
    const standIn = state.shop(shop) ?? state.installShop(shop, {});
    standIn.reinstall();
    standIn.installedThroughAdmin = true;
    const params: Record<string, string> = {
      embedded: "1",
      host: Buffer.from(`admin.shopify.com/store/${handle}`).toString("base64").replace(/=+$/, ""),
      id_token: await mintSessionToken(shop, options),
      locale: "en",
      session: randomBytes(16).toString("hex"),
      shop,
      timestamp: String(Math.floor(Date.now() / 1000)),
    };
    params.hmac = signOAuthQuery(params, options.apiSecret);
    const frame = new URL(options.appUrl);
    for (const [k, v] of Object.entries(params)) frame.searchParams.set(k, v);
    const script = `
const APP_ORIGIN = ${JSON.stringify(appOrigin)};
const API_KEY = ${JSON.stringify(options.apiKey)};
const SHOP = ${JSON.stringify(shop)};
window.addEventListener("message", async (event) => {
  const data = event.data;
  if (event.origin !== APP_ORIGIN || !data || data.type !== "standin:scopes") return;
  const reply = (answer) => event.source.postMessage({ type: "standin:scopes", id: data.id, ...answer }, event.origin);
  if (data.apiKey !== API_KEY) return reply({ error: "the page's shopify-api-key is not this app's client ID" });
  const res = await fetch("/_standin/admin/scopes", {
    method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ shop: SHOP, action: data.action, scopes: data.scopes }),
  });
  const body = await res.json();
  reply(res.ok ? { answer: body } : { error: body.errors });
});
window.addEventListener("message", async (event) => {
  const data = event.data;
  if (event.origin !== APP_ORIGIN || !data || data.type !== "standin:id-token") return;
  const reply = (answer) => event.source.postMessage({ type: "standin:id-token", id: data.id, ...answer }, event.origin);
  if (data.apiKey !== API_KEY) return reply({ error: "the page's shopify-api-key is not this app's client ID" });
  const res = await fetch("/_standin/admin/session-token", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ shop: SHOP }),
  });
  const body = await res.json();
  reply(res.ok ? { token: body.token } : { error: body.errors });
});`;
    return c.html(html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Order sync · ${shop} · Shopify (stand-in)</title>
<style>${raw(ADMIN_STYLES)}</style></head>
<body>
<div class="top"><strong>shopify</strong><span class="search">Search</span><span>${shop}</span></div>
<div class="frame">
<nav><a href="#">Home</a><a href="#">Orders</a><a href="#">Products</a><a href="#">Customers</a>
<div class="group">Apps</div><a class="active" href="#">Order sync</a></nav>
<iframe name="app-iframe" title="Order sync" src="${frame.toString()}"></iframe>
</div>
<script>${raw(script)}</script>
</body></html>`);
  });

  /** The admin page's own endpoint: a fresh session token for one of the stand-in's shops. */
  app.post("/_standin/admin/session-token", async (c) => {
    const body = (await c.req.json().catch(() => ({}))) as { shop?: unknown };
    const shop = typeof body.shop === "string" ? state.shop(body.shop) : undefined;
    if (!shop) return c.json({ errors: "shop: not installed in the stand-in" }, 404);
    shop.sessionTokensIssued++;
    return c.json({ token: await mintSessionToken(shop.domain, options) });
  });

  /**
   * The admin's answer to App Bridge's Scopes API: `query` lists the granted scopes, `request`
   * grants the ones asked for (the merchant approves, unless the shop is set to decline), and
   * `revoke` takes them back.
   */
  app.post("/_standin/admin/scopes", async (c) => {
    const body = (await c.req.json().catch(() => ({}))) as {
      shop?: unknown;
      action?: unknown;
      scopes?: unknown;
    };
    const shop = typeof body.shop === "string" ? state.shop(body.shop) : undefined;
    if (!shop) return c.json({ errors: "shop: not installed in the stand-in" }, 404);
    const asked = Array.isArray(body.scopes)
      ? body.scopes.filter((s): s is string => typeof s === "string")
      : [];
    const detail = () => ({ granted: [...shop.scopes], required: [], optional: [] });
    if (body.action === "request") {
      if (shop.declineScopeRequests) return c.json({ result: "declined-all", detail: detail() });
      for (const scope of asked) if (!shop.scopes.includes(scope)) shop.scopes.push(scope);
      return c.json({ result: "granted-all", detail: detail() });
    }
    if (body.action === "revoke") {
      shop.scopes = shop.scopes.filter((s) => !asked.includes(s));
      return c.json({ detail: detail() });
    }
    return c.json(detail());
  });

  return app;
}
