import { existsSync, readFileSync } from "node:fs";
import { signOAuthQuery } from "@connector/shopify-standin";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import { SUBSCRIBED_TOPICS, topicEnum } from "../../../src/shopify/index.ts";
import {
  APP_SECRET,
  CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const SHOP = "merchant-one.myshopify.com";

let h: InstallHarness;
beforeEach(async () => {
  h = await startInstallHarness();
});
afterEach(async () => {
  await h.close();
});

/** A callback query signed like Shopify's, for forging the parts a test changes. */
function signedCallback(params: Record<string, string>, secret = APP_SECRET) {
  const query = { timestamp: String(Math.floor(Date.now() / 1000)), ...params };
  const hmac = signOAuthQuery(query, secret);
  return `/shopify/callback?${new URLSearchParams({ ...query, hmac })}`;
}

describe("merchant install through Shopify OAuth", () => {
  it("redirects to the shop's authorize page with a random state bound to a signed cookie", async () => {
    // Production: no stand-in, the browser goes to https://{shop}.
    const prod = await startInstallHarness({ env: { SHOPIFY_ADMIN_URL: "" } });
    try {
      const jar = new CookieJar();
      const begin = await prod.get(`/shopify/install?shop=${SHOP}`);
      jar.take(begin);
      expect(begin.status).toBe(302);
      const location = new URL(begin.headers.get("location") ?? "");
      expect(location.origin).toBe(`https://${SHOP}`);
      expect(location.pathname).toBe("/admin/oauth/authorize");
      expect(location.searchParams.get("redirect_uri")).toBe(`${prod.appUrl}/shopify/callback`);
      expect(location.searchParams.get("scope")).toContain("read_orders");
      expect(location.searchParams.get("state")).toMatch(/^[\w-]{15,}$/);
      expect(jar.has("shopify_app_state")).toBe(true);

      const again = await prod.get(`/shopify/install?shop=${SHOP}`);
      const second = new URL(again.headers.get("location") ?? "").searchParams.get("state");
      expect(second).not.toBe(location.searchParams.get("state"));
    } finally {
      await prod.close();
    }
  });

  it("sends the browser to the stand-in's authorize page in local development", async () => {
    const begin = await h.get(`/shopify/install?shop=${SHOP}`);
    const location = new URL(begin.headers.get("location") ?? "");
    expect(location.origin).toBe(h.standIn.url);
    expect(location.pathname).toBe("/admin/oauth/authorize");
    expect(location.searchParams.get("shop")).toBe(SHOP);
  });

  it("completes authorize → callback → token → subscriptions and lands on the settings", async () => {
    const { callback, jar } = await h.install(SHOP);
    expect(callback.status).toBe(302);
    expect(callback.headers.get("location")).toBe("/settings");
    const sessionCookie = callback.headers
      .getSetCookie()
      .find((c) => c.startsWith("connector_shop="));
    expect(sessionCookie).toMatch(/HttpOnly/i);
    expect(sessionCookie).toMatch(/SameSite=Lax/i);
    expect(jar.has("connector_shop")).toBe(true);

    const standInShop = h.standIn.state.shop(SHOP);
    expect(standInShop).toBeDefined();
    // Every topic the connector needs, pointing at APP_URL/webhooks/shopify.
    const subscribed = standInShop?.subscriptions.map((s) => [s.topic, s.uri]).sort();
    expect(subscribed).toEqual(
      SUBSCRIBED_TOPICS.map((t) => [topicEnum(t), `${h.appUrl}/webhooks/shopify`]).sort(),
    );

    const shop = await h.ctx.shops.getShop(SHOP);
    expect(shop?.accessTokenSealed).toMatch(new RegExp(`^v2:${h.ctx.secrets.keyId}:`));
    // An expiring offline token (Shopify refuses non-expiring ones from 2027-01-01), with its
    // refresh token, both sealed, and the times to refresh it and when it ends.
    const token = h.ctx.secrets.open(
      shop?.accessTokenSealed ?? "",
      sealedFor.shopifyAccessToken(SHOP),
    );
    expect(standInShop?.expiringTokens.has(token)).toBe(true);
    expect(
      standInShop?.refreshTokens.has(
        h.ctx.secrets.open(shop?.refreshTokenSealed ?? "", sealedFor.shopifyRefreshToken(SHOP)),
      ),
    ).toBe(true);
    const expiresIn = Date.parse(shop?.accessTokenExpiresAt ?? "") - Date.now();
    expect(expiresIn).toBeGreaterThan(3_500_000);
    expect(
      Date.parse(shop?.accessTokenExpiresAt ?? "") - Date.parse(shop?.accessTokenRefreshAt ?? ""),
    ).toBe(300_000);
    expect(shop?.shopCurrency).toBe("USD");
    expect(shop?.status).toBe("paused");
    expect(shop?.pausedReason).toMatch(/provider settings/);
    expect(shop?.subscriptionsCheckedAt).not.toBeNull();

    // The library's offline session row holds the token sealed…
    const rows = await h.ctx.db.orm.select().from(h.ctx.db.t.session);
    expect(rows.map((r) => [r.id, r.shop, r.isOnline])).toEqual([[`offline_${SHOP}`, SHOP, false]]);
    expect(rows[0]?.accessToken).toMatch(/^v2:[0-9a-f]{8}:/);
    // …and loads back through the storage with the plain token.
    const session = await h.ctx.sessions.loadSession(h.ctx.shopify.session.getOfflineId(SHOP));
    expect(session?.accessToken).toBe(token);
  });

  it("leaves no plaintext access token in the SQLite file or its WAL", async () => {
    await h.install(SHOP);
    const token = h.standIn.state.shop(SHOP)?.accessToken ?? "";
    expect(token).toMatch(/^shpat_/);
    const bytes = [h.dbPath, `${h.dbPath}-wal`]
      .filter((f) => existsSync(f))
      .map((f) => readFileSync(f));
    const all = Buffer.concat(bytes);
    expect(all.length).toBeGreaterThan(0);
    expect(all.includes(Buffer.from(token))).toBe(false);
    expect(all.includes(Buffer.from(token.slice(6)))).toBe(false);
    // The shop row and the library's session row are there, sealed.
    expect(all.includes(Buffer.from(SHOP))).toBe(true);
    expect(all.includes(Buffer.from("v2:"))).toBe(true);
  });

  it("refuses a forged state signed with the app secret (403) and stores nothing", async () => {
    const jar = new CookieJar();
    jar.take(await h.get(`/shopify/install?shop=${SHOP}`));
    const res = await h.get(
      signedCallback({ code: "abc", shop: SHOP, state: "123456789012345" }),
      jar,
    );
    expect(res.status).toBe(403);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toMatch(/already used or has expired/);
    expect(await h.ctx.shops.getShop(SHOP)).toBeNull();
  });

  it("accepts a state once: replaying a completed callback is refused", async () => {
    const jar = new CookieJar();
    const begin = await h.get(`/shopify/install?shop=${SHOP}`);
    jar.take(begin);
    const approved = await h.authorize(begin.headers.get("location") ?? "");
    const callbackUrl = approved.headers.get("location") ?? "";
    const first = await h.get(callbackUrl, jar);
    expect(first.status).toBe(302);
    const replay = await h.get(callbackUrl, jar);
    expect(replay.status).toBe(403);
  });

  it("refuses a callback whose HMAC does not match (401) before touching the state", async () => {
    const jar = new CookieJar();
    const begin = await h.get(`/shopify/install?shop=${SHOP}`);
    jar.take(begin);
    const approved = await h.authorize(begin.headers.get("location") ?? "");
    const url = new URL(approved.headers.get("location") ?? "");
    url.searchParams.set("code", "swapped-code");
    const forged = await h.get(`${url.pathname}${url.search}`, jar);
    expect(forged.status).toBe(401);
    expect(await forged.text()).toMatch(/not signed by Shopify/);
    expect(await h.ctx.shops.getShop(SHOP)).toBeNull();

    // The real callback still works: the forged one did not burn the state.
    const real = await h.get(approved.headers.get("location") ?? "", jar);
    expect(real.status).toBe(302);
  });

  it("refuses a callback signed with another secret", async () => {
    const jar = new CookieJar();
    const begin = await h.get(`/shopify/install?shop=${SHOP}`);
    jar.take(begin);
    const state = new URL(begin.headers.get("location") ?? "").searchParams.get("state") ?? "";
    const res = await h.get(
      signedCallback({ code: "abc", shop: SHOP, state }, "some-other-secret"),
      jar,
    );
    expect(res.status).toBe(401);
  });

  it("refuses a callback from a browser that did not begin the install (no state cookie)", async () => {
    const begin = await h.get(`/shopify/install?shop=${SHOP}`);
    const approved = await h.authorize(begin.headers.get("location") ?? "");
    const res = await h.get(approved.headers.get("location") ?? "", new CookieJar());
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/did not start this install/);
    expect(await h.ctx.shops.getShop(SHOP)).toBeNull();
  });

  it.each([
    "evil.com",
    "x.myshopify.com.evil.com",
    "https://evil.com",
    "x.myshopify.com/../evil.com",
    "",
  ])("refuses the shop domain %j before any redirect", async (shop) => {
    const res = await h.get(`/shopify/install?shop=${encodeURIComponent(shop)}`);
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(await res.text()).toMatch(/myshopify\.com address/);
  });

  it.each([
    "https://merchant-one.myshopify.com",
    "merchant-one.myshopify.com/",
    "admin.shopify.com/store/merchant-one/settings",
    "admin.evil.com/store/merchant-one",
  ])(
    "refuses %j, which is no shop name nor its admin address, before any redirect",
    async (shop) => {
      const res = await h.get(`/shopify/install?shop=${encodeURIComponent(shop)}`);
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
    },
  );

  it.each([
    "admin.shopify.com/store/merchant-one",
    "admin.myshopify.com/store/merchant-one",
    " Admin.Shopify.com/store/Merchant-One ",
  ])(
    "takes the shop's admin address %j as its myshopify.com name (docs/shopify-app.md)",
    async (shop) => {
      const begin = await h.get(`/shopify/install?shop=${encodeURIComponent(shop)}`);
      expect(begin.status).toBe(302);
      expect(new URL(begin.headers.get("location") ?? "").searchParams.get("shop")).toBe(SHOP);
    },
  );

  it("installs a shop typed in another case or with spaces around it, as that shop", async () => {
    const jar = new CookieJar();
    const begin = await h.get(
      `/shopify/install?shop=${encodeURIComponent(" Merchant-One.MyShopify.com ")}`,
    );
    jar.take(begin);
    expect(begin.status).toBe(302);
    const authorize = new URL(begin.headers.get("location") ?? "");
    expect(authorize.searchParams.get("shop")).toBe(SHOP);
    const approved = await h.authorize(authorize.toString());
    const callback = await h.get(approved.headers.get("location") ?? "", jar);
    expect(callback.status).toBe(302);
    expect(callback.headers.get("location")).toBe("/settings");
    expect((await h.ctx.shops.getShop(SHOP))?.accessTokenSealed).toBeTruthy();
    // The app URL Shopify opens leads there too.
    jar.take(callback);
    const open = await h.get("/?shop=MERCHANT-ONE.myshopify.com", jar);
    expect(open.headers.get("location")).toBe("/settings");
  });

  it("refuses a callback naming a foreign shop domain even when signed", async () => {
    const res = await h.get(
      signedCallback({ code: "abc", shop: "x.myshopify.com.evil.com", state: "1" }),
    );
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });
});

describe("the install after an uninstall, and the install's own pages", () => {
  it("sends a merchant opening the app after an uninstall through the install again, then to the settings", async () => {
    const { jar } = await h.install(SHOP);
    expect((await h.get(`/?shop=${SHOP}`, jar)).headers.get("location")).toBe("/settings");

    await h.standIn.uninstallShop(SHOP);
    await expect.poll(async () => (await h.ctx.shops.getShop(SHOP))?.status).toBe("uninstalled");

    // The old cookie names the shop but an installation that ended: Shopify's app URL must
    // lead into the install, not to a settings page that refuses the cookie.
    const reopen = await h.get(`/?shop=${SHOP}`, jar);
    expect(reopen.status).toBe(302);
    expect(reopen.headers.get("location")).toBe(`/shopify/install?shop=${SHOP}`);

    // Installed again: the new cookie opens the settings, and the app URL leads there.
    const { callback, jar: again } = await h.install(SHOP);
    expect(callback.headers.get("location")).toBe("/settings");
    expect((await h.get("/settings", again)).status).toBe(200);
    expect((await h.get(`/?shop=${SHOP}`, again)).headers.get("location")).toBe("/settings");
    // The cookie of the first installation opens nothing.
    expect((await h.get("/settings", jar)).status).toBe(401);
  });

  it.each([
    ["a refused shop address", "/shopify/install?shop=evil.com", 400],
    ["a callback not signed by Shopify", `/shopify/callback?shop=${SHOP}&code=x&hmac=00`, 401],
    ["the settings without a session", "/settings", 401],
  ])("serves %s as a page nobody may frame, styled under its CSP", async (_, path, status) => {
    const res = await h.get(path);
    expect(res.status).toBe(status);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    // The page's one stylesheet carries the nonce the CSP allows (else it shows unstyled).
    const nonce = csp.match(/style-src 'nonce-([^']+)'/)?.[1];
    expect(nonce).toBeTruthy();
    const body = await res.text();
    expect(body).toContain(`<style nonce="${nonce}">`);
    expect(body.match(/<style/g)).toHaveLength(1);
  });
});
