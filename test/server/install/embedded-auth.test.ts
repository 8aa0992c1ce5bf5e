import { mintSessionToken } from "@connector/shopify-standin";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  EARLIER_RECONNECT_NEEDED,
  RECONNECT_NEEDED,
} from "../../../src/shopify/install/shop-tokens.ts";
import {
  APP_KEY,
  APP_SECRET,
  BROWSER_UA,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const SHOP = "managed-shop.myshopify.com";
const OTHER = "someone-else.myshopify.com";
const HOST = Buffer.from("admin.shopify.com/store/managed-shop")
  .toString("base64")
  .replace(/=+$/, "");
const KEYS = { apiKey: APP_KEY, apiSecret: APP_SECRET };

let h: InstallHarness;
beforeEach(async () => {
  h = await startInstallHarness();
  // Shopify-managed installation: the shop has the app, the connector has never seen it.
  h.standIn.installShop(SHOP);
  h.standIn.installShop(OTHER);
});
afterEach(async () => {
  await h.close();
});

const embedded = (token: string | null, extra: Record<string, string> = {}) => {
  const q = new URLSearchParams({ embedded: "1", shop: SHOP, host: HOST, ...extra });
  if (token) q.set("id_token", token);
  return `/settings?${q.toString()}`;
};

/** A form posted from inside the frame: the session token in `id_token`, no cookie. */
const postEmbedded = (path: string, form: Record<string, string>) =>
  fetch(new URL(`${path}?embedded=1&shop=${SHOP}&host=${HOST}`, h.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: {
      "user-agent": BROWSER_UA,
      "content-type": "application/x-www-form-urlencoded",
      origin: h.appUrl,
    },
    body: new URLSearchParams(form),
  });

describe("the embedded settings page's authentication", () => {
  it("installs a shop it has never seen by token exchange on the first page load, once", async () => {
    const first = await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    expect(first.status).toBe(200);
    expect(await first.text()).toContain(`Settings for ${SHOP}`);
    expect(h.standIn.state.shop(SHOP)?.tokenExchanges).toBe(1);
    const record = await h.ctx.shops.getShop(SHOP);
    expect(record?.accessTokenSealed).not.toBeNull();
    expect(record?.refreshTokenSealed).not.toBeNull();
    // The app URL hands the admin's frame to the settings page with its query.
    const root = await h.get(`/?embedded=1&shop=${SHOP}&host=${HOST}&id_token=x`);
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe(
      `/settings?embedded=1&shop=${SHOP}&host=${HOST}&id_token=x`,
    );

    await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    expect(h.standIn.state.shop(SHOP)?.tokenExchanges).toBe(1);
  });

  it("sends a page load with a missing, expired or forged token to the bounce page, once", async () => {
    const forged = await mintSessionToken(SHOP, { apiKey: APP_KEY, apiSecret: "not-the-secret" });
    const expired = await mintSessionToken(SHOP, KEYS, -120);
    for (const token of [null, forged, expired]) {
      const bounce = await h.get(embedded(token));
      expect(bounce.status).toBe(200);
      const page = await bounce.text();
      expect(page).toContain(`<meta name="shopify-api-key" content="${APP_KEY}"`);
      expect(page).toContain("shopify.idToken()");
      expect(page).not.toContain("Settings for");
      // After one bounce a token that still fails is refused, not bounced again.
      expect((await h.get(embedded(token, { bounced: "1" }))).status).toBe(401);
    }
    expect(await h.ctx.shops.getShop(SHOP)).toBeNull();
    expect(h.standIn.state.shop(SHOP)?.tokenExchanges).toBe(0);
  });

  it("never lets a token for one shop open another shop's page", async () => {
    const theirs = await mintSessionToken(OTHER, KEYS);
    const res = await h.get(embedded(theirs, { bounced: "1" }));
    expect(res.status).toBe(401);
    expect(await h.ctx.shops.getShop(OTHER)).toBeNull();
    expect(await h.ctx.shops.getShop(SHOP)).toBeNull();
  });

  it("saves a form that carries a fresh session token and stays embedded; refuses one without", async () => {
    await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    const token = await mintSessionToken(SHOP, KEYS);
    const saved = await postEmbedded("/settings/test-orders", {
      sendTestOrders: "on",
      id_token: token,
    });
    expect(saved.status).toBe(303);
    const next = new URL(saved.headers.get("location") ?? "", h.appUrl);
    expect(Object.fromEntries(next.searchParams)).toMatchObject({
      saved: "testOrdersOn",
      embedded: "1",
      shop: SHOP,
      host: HOST,
      id_token: token,
    });
    expect((await h.ctx.shops.getShop(SHOP))?.sendTestOrders).toBe(true);
    const after = await h.get(`${next.pathname}${next.search}`);
    expect(await after.text()).toContain("Test orders will be sent to the provider.");

    const unsigned = await postEmbedded("/settings/test-orders", {});
    expect(unsigned.status).toBe(401);
    const foreign = await postEmbedded("/settings/test-orders", {
      id_token: await mintSessionToken(OTHER, KEYS),
    });
    expect(foreign.status).toBe(401);
    expect((await h.ctx.shops.getShop(SHOP))?.sendTestOrders).toBe(true);
  });

  it("takes a file upload's session token from its query, never from the multipart body", async () => {
    await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    const upload = (query: Record<string, string>, field?: string) => {
      const form = new FormData();
      form.append("file", new Blob(["handle,sku\n"], { type: "text/csv" }), "");
      if (field) form.append("id_token", field);
      const q = new URLSearchParams({ embedded: "1", shop: SHOP, host: HOST, ...query });
      return fetch(new URL(`/settings/catalog?${q.toString()}`, h.appUrl), {
        method: "POST",
        redirect: "manual",
        headers: { "user-agent": BROWSER_UA, origin: h.appUrl },
        body: form,
      });
    };
    // Signed in: the route itself answers (no file chosen).
    const signed = await upload({ id_token: await mintSessionToken(SHOP, KEYS) });
    expect(signed.status).toBe(400);
    expect(await signed.text()).toContain("Choose a .csv or a .json file to upload.");
    // The token as a multipart field is not looked for: the body is not read before sign-in.
    const inBody = await upload({}, await mintSessionToken(SHOP, KEYS));
    expect(inBody.status).toBe(401);
  });

  it("answers App Bridge's fetches authenticated by the Authorization header", async () => {
    await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    const res = await h.get("/settings/backfill/progress", undefined, {
      authorization: `Bearer ${await mintSessionToken(SHOP, KEYS)}`,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ backfill: null, text: null });
  });

  it("brings a shop whose refresh token Shopify refused back when the merchant opens the app", async () => {
    await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    await h.ctx.shops.setStatus(SHOP, "paused", RECONNECT_NEEDED);
    const res = await h.get(embedded(await mintSessionToken(SHOP, KEYS)));
    expect(res.status).toBe(200);
    expect(h.standIn.state.shop(SHOP)?.tokenExchanges).toBe(2);
    expect((await h.ctx.shops.getShop(SHOP))?.pausedReason).not.toBe(RECONNECT_NEEDED);
    // A shop an earlier version paused, in that version's words, reconnects the same way.
    await h.ctx.shops.setStatus(SHOP, "paused", EARLIER_RECONNECT_NEEDED);
    expect((await h.get(embedded(await mintSessionToken(SHOP, KEYS)))).status).toBe(200);
    expect(h.standIn.state.shop(SHOP)?.tokenExchanges).toBe(3);
    expect((await h.ctx.shops.getShop(SHOP))?.pausedReason).not.toBe(EARLIER_RECONNECT_NEEDED);
  });

  it("shows a clear page when Shopify refuses the token exchange, and stores nothing", async () => {
    // The shop is not in Shopify's records (the stand-in never installed it): the exchange fails.
    const unknown = "never-installed.myshopify.com";
    const q = new URLSearchParams({
      embedded: "1",
      shop: unknown,
      host: Buffer.from("admin.shopify.com/store/never-installed").toString("base64"),
      id_token: await mintSessionToken(unknown, KEYS),
    });
    const res = await h.get(`/settings?${q.toString()}`);
    expect(res.status).toBe(401);
    expect(await res.text()).toContain("Shopify did not hand over access for this shop");
    expect(await h.ctx.shops.getShop(unknown)).toBeNull();
  });
});
