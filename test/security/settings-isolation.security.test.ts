import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BROWSER_UA,
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../helpers/install-harness.ts";

/**
 * One shop's settings are never reachable from another shop's session: the settings routes read
 * the shop from the signed session cookie alone, so a shop named in a query string, a form field
 * or a header changes nothing of that shop, and shows nothing of it.
 */
const MINE = "isolation-mine.myshopify.com";
const THEIRS = "isolation-theirs.myshopify.com";
const PROVIDER = { clientId: "isolation-client", clientSecret: "isolation-secret-77c1" };

let h: InstallHarness;
let mine: CookieJar;
let theirs: CookieJar;
beforeAll(async () => {
  h = await startInstallHarness({ provider: { ...PROVIDER, stores: [1001, 1002] } });
  ({ jar: mine } = await h.install(MINE));
  ({ jar: theirs } = await h.install(THEIRS));
});
afterAll(() => h.close());

function post(path: string, form: Record<string, string>, jar: CookieJar) {
  return fetch(new URL(path, h.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: {
      "user-agent": BROWSER_UA,
      "content-type": "application/x-www-form-urlencoded",
      origin: h.appUrl,
      cookie: jar.header(),
      "x-shopify-shop-domain": THEIRS,
    },
    body: new URLSearchParams(form),
  });
}

describe("settings isolation between shops", () => {
  it("changes only the session's shop when every form names the other shop", async () => {
    const before = JSON.stringify(await h.ctx.shops.getShop(THEIRS));
    const aimed = { shop: THEIRS, shopDomain: THEIRS };
    const forms: [string, Record<string, string>][] = [
      [
        "/settings/provider",
        {
          ...aimed,
          clientId: PROVIDER.clientId,
          clientSecret: PROVIDER.clientSecret,
          environment: "production",
        },
      ],
      ["/settings/store", { ...aimed, storeId: "1002" }],
      ["/settings/locations", { ...aimed, "location.4001": "77", defaultLocationId: "77" }],
      ["/settings/protection", { ...aimed }],
      ["/settings/backfill", { ...aimed }],
      ["/settings/resync", { ...aimed, order: "#1001" }],
    ];
    for (const [path, form] of forms) {
      const response = await post(`${path}?shop=${THEIRS}`, form, mine);
      expect(response.status, path).toBeLessThan(500);
    }
    expect(JSON.stringify(await h.ctx.shops.getShop(THEIRS))).toBe(before);
    // The session's own shop did take the changes: the forms were not simply refused.
    const own = await h.ctx.shops.getShop(MINE);
    expect(own?.providerClientId).toBe(PROVIDER.clientId);
    expect(own?.locationMap).toEqual({ "4001": 77 });
  });

  it("shows only the session's shop, whatever the request names", async () => {
    for (const path of [
      `/settings?shop=${THEIRS}`,
      `/settings/backfill/progress?shop=${THEIRS}`,
      `/settings/?shop=${THEIRS}&host=${Buffer.from(`${THEIRS}/admin`).toString("base64")}`,
    ]) {
      const response = await h.get(path, mine, { "x-shopify-shop-domain": THEIRS });
      expect(await response.text(), path).not.toContain(THEIRS);
    }
    const own = await (await h.get("/settings", theirs)).text();
    expect(own).toContain(`Settings for ${THEIRS}`);
    expect(own).not.toContain(MINE);
  });

  it("refuses a session cookie re-pointed at the other shop", async () => {
    const value = /connector_shop=([^;]+)/.exec(mine.header())?.[1] ?? "";
    const [payload = "", signature = ""] = decodeURIComponent(value).split(".");
    const repointed = `${payload.replace(MINE, THEIRS)}.${signature}`;
    const response = await h.get("/settings", undefined, {
      cookie: `connector_shop=${encodeURIComponent(repointed)}`,
    });
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain(THEIRS);
  });
});
