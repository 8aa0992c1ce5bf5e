import { existsSync, readFileSync } from "node:fs";
import type { RestOrder } from "@connector/shopify-standin";
import { SignJWT } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { signWebhook } from "../../../src/cli/webhook-command.ts";
import { CREDENTIALS_REFUSED } from "../../../src/engine/sync-processor.ts";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import {
  EARLIER_RECONNECT_NEEDED,
  RECONNECT_NEEDED,
} from "../../../src/shopify/install/shop-tokens.ts";
import {
  APP_KEY,
  APP_SECRET,
  BROWSER_UA,
  CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";
import { type ModelOrder, orderPayload } from "../../helpers/shopify-order-builder.ts";

const SHOP = "settings-shop.myshopify.com";
const OTHER = "other-merchant.myshopify.com";
const PROVIDER = { clientId: "merchant-client", clientSecret: "merchant-secret-4f9a1c" };

let h: InstallHarness;
let jar: CookieJar;
beforeEach(async () => {
  h = await startInstallHarness({
    provider: {
      ...PROVIDER,
      stores: [1001, 1002],
      storeCurrency: { 1001: "USD", 1002: "EUR" },
      storeTimezone: { 1001: "America/New_York", 1002: "Europe/Berlin" },
    },
  });
  ({ jar } = await h.install(SHOP));
});
afterEach(async () => {
  await h.close();
});

/** A form post as the page's browser sends it (same origin). */
function post(
  path: string,
  form: Record<string, string | string[]>,
  cookies = jar,
  origin?: string,
) {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(form)) for (const x of [v].flat()) body.append(k, x);
  return fetch(new URL(path, h.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: {
      "user-agent": BROWSER_UA,
      "content-type": "application/x-www-form-urlencoded",
      origin: origin ?? h.appUrl,
      cookie: cookies.header(),
    },
    body,
  });
}

describe("settings page", () => {
  it("shows the settings of the shop in the session cookie, with a strict CSP", async () => {
    const res = await h.get("/settings", jar);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toMatch(/script-src 'nonce-/);
    // Outside the admin, framed by nobody (inside it, by the shop's admin only).
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const page = await res.text();
    expect(page).toContain(`Settings for ${SHOP}`);
    expect(page).toContain("Sync is paused until the provider settings below are complete");
    // Products and locations come from the shop through the Admin API.
    expect(page).toContain("Shipping protection");
    expect(page).toContain("Main warehouse");
  });

  it("refuses without a session (401), with a tampered cookie, and a session never shows another shop", async () => {
    expect((await h.get("/settings")).status).toBe(401);
    const forged = jar
      .header()
      .replace(/connector_shop=[^;]+/, `connector_shop=${OTHER}|9999999999999.AAAA`);
    expect((await h.get("/settings", undefined, { cookie: forged })).status).toBe(401);

    const other = await h.install(OTHER);
    const mine = await (await h.get("/settings?shop=other-merchant.myshopify.com", jar)).text();
    expect(mine).toContain(`Settings for ${SHOP}`);
    expect(mine).not.toContain(OTHER);
    const theirs = await (await h.get("/settings", other.jar)).text();
    expect(theirs).toContain(`Settings for ${OTHER}`);
  });

  it("answers a form sent after the session ended with what to do to keep what was typed", async () => {
    // The page's script asks first: the session answers 204 while it holds, 401 after.
    expect((await h.get("/settings/session", jar)).status).toBe(204);
    expect((await h.get("/settings/session")).status).toBe(401);
    // Without the script (or a stale tab): the form itself reaches a page that says so.
    const res = await h.postForm("/settings/resync", { orderName: "#1001" }, new CookieJar());
    expect(res.status).toBe(401);
    const page = await res.text();
    expect(page).toContain("Your session has ended");
    expect(page).toContain("Nothing was saved. Go back to the page to keep what you typed");
  });

  it.each([
    [
      `${CREDENTIALS_REFUSED}: token request answered 401 {"error":"invalid_client"}`,
      "the provider no longer accepts the saved client ID and secret. Enter them again under Provider connection",
      /invalid_client|answered 401/,
    ],
    [
      RECONNECT_NEEDED,
      "Shopify no longer lets this app read your orders. Open the app again from your Shopify admin",
      /reconnect needed|no longer accepts the app's token/,
    ],
    [
      // As versions before the rename stored it.
      EARLIER_RECONNECT_NEEDED,
      "Shopify no longer lets this app read your orders. Open the app again from your Shopify admin",
      /refresh token/,
    ],
  ])("tells the merchant why sync is paused in their words: %s", async (reason, words, jargon) => {
    await h.ctx.shops.setStatus(SHOP, "paused", reason);
    const page = await (await h.get("/settings", jar)).text();
    expect(page).toContain(`Sync is paused: ${words}`);
    expect(page).not.toMatch(jargon);
  });

  it.each(["2026-02-30", "2026-13-01", "2026-1-1", "31/01/2026", ""])(
    "refuses %j as the backfill's start date, naming the field",
    async (since) => {
      const res = await post("/settings/backfill", { since });
      expect(res.status).toBe(400);
      const page = await res.text();
      expect(page).toContain("Enter the start date as a date, for example 2026-01-31.");
      expect(page).toMatch(/id="since"[^>]*aria-invalid="true"/);
    },
  );

  it("accepts Shopify's session token for the shop it names when embedded, and refuses a forged one", async () => {
    const token = (secret: string, aud = APP_KEY) =>
      new SignJWT({ dest: `https://${SHOP}`, sid: "s1" })
        .setProtectedHeader({ alg: "HS256" })
        .setIssuer(`https://${SHOP}/admin`)
        .setAudience(aud)
        .setSubject("42")
        .setIssuedAt()
        .setNotBefore("0s")
        .setExpirationTime("1m")
        .sign(new TextEncoder().encode(secret));
    const ok = await h.get("/settings", undefined, {
      authorization: `Bearer ${await token(APP_SECRET)}`,
    });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(`Settings for ${SHOP}`);
    for (const bad of [await token("another-secret"), await token(APP_SECRET, "another-app")]) {
      const res = await h.get("/settings", undefined, { authorization: `Bearer ${bad}` });
      expect(res.status).toBe(401);
    }
  });

  it("refuses a form posted from another origin (CSRF) without changing anything", async () => {
    const res = await post(
      "/settings/locations",
      { "location.4001": "12" },
      jar,
      "https://evil.example",
    );
    expect(res.status).toBe(403);
    expect((await h.ctx.shops.getShop(SHOP))?.locationMap).toEqual({});
  });

  it("rejects wrong provider credentials with a clear message and saves nothing", async () => {
    const res = await post("/settings/provider", {
      clientId: PROVIDER.clientId,
      clientSecret: "wrong-secret",
      environment: "production",
    });
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain(
      "did not accept this client ID and secret for the production environment",
    );
    expect(page).toContain(`value="${PROVIDER.clientId}"`);
    expect(page).not.toContain("wrong-secret");
    const shop = await h.ctx.shops.getShop(SHOP);
    expect(shop?.providerClientId).toBeNull();
    expect(shop?.providerClientSecretSealed).toBeNull();
  });

  it("refuses a client ID or secret far longer than any provider issues, naming the field", async () => {
    const tokens = h.provider.state.counters.tokenRequests;
    for (const [field, form] of [
      ["clientId", { clientId: "x".repeat(201), clientSecret: "s", environment: "production" }],
      [
        "clientSecret",
        { clientId: "id", clientSecret: "s".repeat(501), environment: "production" },
      ],
    ] as const) {
      const res = await post("/settings/provider", form);
      expect(res.status).toBe(400);
      const page = await res.text();
      expect(page).toContain(
        field === "clientId" ? "The client ID is longer" : "The client secret is longer",
      );
      expect(page).toMatch(new RegExp(`id="${field}"[^>]*aria-invalid="true"`));
    }
    // Nothing was sent to the provider.
    expect(h.provider.state.counters.tokenRequests).toBe(tokens);
  });

  it("saves verified credentials, lists the covered stores with currency and time zone, warns on a currency mismatch and activates the shop once a store is chosen", async () => {
    const saved = await post("/settings/provider", { ...PROVIDER, environment: "staging" });
    expect(saved.status).toBe(303);
    const page = await (await h.get(saved.headers.get("location") ?? "", jar)).text();
    expect(page).toContain("Credentials verified with the provider and saved");
    expect(page).toContain("Store 1001");
    expect(page).toContain("America/New_York");
    expect(page).toContain("Store 1002");
    expect(page).toContain("Europe/Berlin");
    expect(page).toContain("This store uses EUR, your shop uses USD");
    expect(page.match(/data-currency-warning/g)).toHaveLength(1);

    const chosen = await post("/settings/store", { storeId: "1001" });
    expect(chosen.status).toBe(303);
    const shop = await h.ctx.shops.getShop(SHOP);
    expect(shop).toMatchObject({
      storeId: 1001,
      storeCurrency: "USD",
      providerClientId: PROVIDER.clientId,
      providerEnvironment: "staging",
      status: "active",
    });
    expect(
      h.ctx.secrets.open(
        shop?.providerClientSecretSealed ?? "",
        sealedFor.providerClientSecret(shop?.shop ?? ""),
      ),
    ).toBe(PROVIDER.clientSecret);

    // A store the token does not cover is refused.
    const foreign = await post("/settings/store", { storeId: "4242" });
    expect(foreign.status).toBe(400);
    expect((await h.ctx.shops.getShop(SHOP))?.storeId).toBe(1001);
  });

  it("saves protection variants picked from the shop's products and refuses unknown ones", async () => {
    expect((await post("/settings/protection", { variantIds: ["999", "998"] })).status).toBe(303);
    expect((await h.ctx.shops.getShop(SHOP))?.protectionVariantIds).toEqual(["999", "998"]);
    expect((await post("/settings/protection", { variantIds: ["123456"] })).status).toBe(400);
    expect((await h.ctx.shops.getShop(SHOP))?.protectionVariantIds).toEqual(["999", "998"]);
  });

  it("maps each Shopify location to a provider fulfillment location and names a bad value", async () => {
    const ok = await post("/settings/locations", {
      "location.4001": "77",
      "location.4002": "",
      defaultLocationId: "77",
    });
    expect(ok.status).toBe(303);
    expect(await h.ctx.shops.getShop(SHOP)).toMatchObject({
      locationMap: { "4001": 77 },
      defaultLocationId: 77,
    });
    // The field is marked; every value comes back as typed, nothing is saved.
    const bad = await post("/settings/locations", {
      "location.4001": "78",
      "location.4002": "abc",
      defaultLocationId: " 79 ",
    });
    expect(bad.status).toBe(400);
    const page = await bad.text();
    expect(page).toContain("The fulfillment location ID marked below must be a whole number");
    expect(page).toMatch(/id="location-4001"[^>]*value="78"/);
    expect(page).toMatch(/id="location-4002"[^>]*value="abc"[^>]*aria-invalid="true"/);
    expect(page).toMatch(/id="defaultLocationId"[^>]*value="79"/);
    expect(await h.ctx.shops.getShop(SHOP)).toMatchObject({
      locationMap: { "4001": 77 },
      defaultLocationId: 77,
    });
    // "1e3" and "12.0" are numbers to JavaScript, not IDs the provider issued.
    for (const odd of ["1e3", "12.0", "0x10", "-4"]) {
      const refused = await post("/settings/locations", { "location.4001": odd });
      expect(refused.status, odd).toBe(400);
    }
  });

  it("leaves no plaintext access token or provider client secret in the SQLite file", async () => {
    await post("/settings/provider", { ...PROVIDER, environment: "production" });
    await post("/settings/store", { storeId: "1001" });
    const token = h.standIn.state.shop(SHOP)?.accessToken ?? "";
    const bytes = Buffer.concat(
      [h.dbPath, `${h.dbPath}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
    );
    expect(bytes.includes(Buffer.from(PROVIDER.clientId))).toBe(true);
    expect(bytes.includes(Buffer.from(PROVIDER.clientSecret))).toBe(false);
    expect(bytes.includes(Buffer.from(token))).toBe(false);
  });
});

describe("settings page with the workers running", () => {
  let w: InstallHarness;
  let wjar: CookieJar;
  afterEach(async () => {
    await w?.close();
  });

  it("resyncs one order by its name and names an order Shopify does not have", async () => {
    w = await startInstallHarness({ workers: true, provider: { ...PROVIDER, stores: [1001] } });
    ({ jar: wjar } = await w.install(SHOP));
    const form = (path: string, body: Record<string, string>) => w.postForm(path, body, wjar);
    await form("/settings/provider", { ...PROVIDER, environment: "production" });
    await form("/settings/store", { storeId: "1001" });
    expect((await w.ctx.shops.getShop(SHOP))?.status).toBe("active");
    await w.standIn.upsertOrder(
      SHOP,
      {
        ...(orderPayload({
          id: 7_700_001,
          number: 1042,
          email: "resync@example.com",
          createdAt: "2026-11-10T10:00:00Z",
          updatedAt: "2026-11-10T10:00:00Z",
          cancelledAt: null,
          note: null,
          shippingCents: 0,
          taxBps: 0,
          lines: [
            {
              id: 1,
              variantId: 5101,
              sku: "SOCK-M",
              title: "Socks",
              price: 1800,
              quantity: 1,
              currentQuantity: 1,
            },
          ],
          fulfillments: [],
          locationId: 4001,
        }) as RestOrder),
      },
      { deliver: false },
    );

    const missing = await form("/settings/resync", { orderName: "#9999" });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain("Shopify has no order named #9999 in this shop.");
    // Text that can be no order's is said to be so, as the CLI and the admin API refuse it;
    // before, it was looked for and answered "Shopify has no order named …".
    for (const orderName of ["gid://shopify/Product/5", "-5", "0"]) {
      const refused = await form("/settings/resync", { orderName });
      expect(refused.status, orderName).toBe(400);
      const text = await refused.text();
      expect(text, orderName).toContain(
        "That is not an order&#39;s name or ID: enter the order&#39;s name, for example #1001.",
      );
      expect(text, orderName).not.toContain("Shopify has no order");
    }

    const queued = await form("/settings/resync", { orderName: "#1042" });
    expect(queued.status).toBe(303);
    await expect
      .poll(async () => (await w.ctx.links.countByResult(SHOP)).synced, { timeout: 15_000 })
      .toBe(1);
    const page = await (await w.get("/settings", wjar)).text();
    expect(page).toMatch(/<strong>1<\/strong> orders synced/);
  });

  it("says a finished backfill is done, and when, instead of a progress line at 100%", async () => {
    w = await startInstallHarness({ workers: true, provider: { ...PROVIDER, stores: [1001] } });
    ({ jar: wjar } = await w.install(SHOP));
    const form = (path: string, body: Record<string, string>) => w.postForm(path, body, wjar);
    await form("/settings/provider", { ...PROVIDER, environment: "production" });
    await form("/settings/store", { storeId: "1001" });
    for (const [i, day] of ["03", "04"].entries()) {
      const at = `2026-11-${day}T10:00:00Z`;
      const order = orderPayload({
        id: 7_800_001 + i,
        number: 1100 + i,
        email: `past${i}@example.com`,
        createdAt: at,
        updatedAt: at,
        cancelledAt: null,
        note: null,
        shippingCents: 0,
        taxBps: 0,
        lines: [],
        fulfillments: [],
        locationId: 4001,
      }) as RestOrder;
      await w.standIn.upsertOrder(SHOP, order, { deliver: false });
    }
    expect((await form("/settings/backfill", { since: "2026-11-01" })).status).toBe(303);
    const progress = async () =>
      (await (await w.get("/settings/backfill/progress", wjar)).json()) as {
        backfill: { status: string; completedAt: string | null } | null;
        text: string | null;
      };
    await expect
      .poll(async () => (await progress()).backfill?.status, { timeout: 15_000 })
      .toBe("completed");
    const { backfill, text } = await progress();
    const finished = `${backfill?.completedAt?.slice(0, 16).replace("T", " ")} UTC`;
    const done = `Done: all 2 past orders read and queued for sync, finished ${finished}`;
    expect(text).toBe(done);
    const page = await (await w.get("/settings", wjar)).text();
    expect(page).toContain(done);
    expect(page).not.toContain("All past orders read");
  });

  it("shows a failed order in words, saying which location to map", async () => {
    w = await startInstallHarness({ workers: true, provider: { ...PROVIDER, stores: [1001] } });
    ({ jar: wjar } = await w.install(SHOP));
    const form = (path: string, body: Record<string, string>) => w.postForm(path, body, wjar);
    await form("/settings/provider", { ...PROVIDER, environment: "production" });
    await form("/settings/store", { storeId: "1001" });
    const model: ModelOrder = {
      id: 7_700_077,
      number: 1077,
      email: "failing@example.com",
      createdAt: "2026-11-10T10:00:00Z",
      updatedAt: "2026-11-11T10:00:00Z",
      cancelledAt: null,
      note: null,
      shippingCents: 0,
      taxBps: 0,
      lines: [
        {
          id: 11,
          variantId: 5101,
          sku: "SOCK-M",
          title: "Socks",
          price: 1800,
          quantity: 1,
          currentQuantity: 1,
        },
      ],
      fulfillments: [
        {
          id: 8801,
          status: "success",
          trackingNumber: "1Z77",
          shipmentStatus: "in_transit",
          lineIds: [11],
          createdAt: "2026-11-11T10:00:00Z",
          updatedAt: "2026-11-11T10:00:00Z",
        },
      ],
      locationId: 4002,
    };
    const signed = signWebhook({
      topic: "orders/create",
      shop: SHOP,
      body: JSON.stringify(orderPayload(model)),
      secret: APP_SECRET,
    });
    const res = await fetch(new URL("/webhooks/shopify", w.appUrl), {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
    expect(res.status).toBe(200);
    await expect
      .poll(async () => (await w.ctx.links.countByResult(SHOP)).deadLettered, { timeout: 15_000 })
      .toBe(1);

    const page = await (await w.get("/settings", wjar)).text();
    expect(page).toMatch(/<strong>1<\/strong> failed/);
    // Once, by name, with what to do; the order by its name, not its ID.
    const explanation =
      "The Shopify location “Downtown store” has no provider fulfillment location: map it under “Locations” below, then resync the order.";
    expect(page.split(explanation)).toHaveLength(2);
    expect(page).toContain("#1077");
    expect(page).not.toContain("Shopify order 7700077");
    expect(page).not.toContain(
      "is not mapped to a provider fulfillment location; map it in the settings",
    );
  });
});
