import { mintSessionToken } from "@connector/shopify-standin";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  APP_KEY,
  APP_SECRET,
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../helpers/install-harness.ts";

/**
 * Issue 31, weakness 4: the standalone settings page sent `X-Frame-Options: SAMEORIGIN` beside a
 * `frame-ancestors` naming the shop's admin (two policies that disagree), and HSTS went out over
 * plain http in development. Each page now has one policy: inside the admin, `frame-ancestors`
 * with the shop and admin.shopify.com and no X-Frame-Options; anywhere else `'none'` and DENY.
 * The bounce and sign-in pages name a shop from the query only when it is a *.myshopify.com
 * domain.
 */
const SHOP = "frames-shop.myshopify.com";
const HOST = Buffer.from(`admin.shopify.com/store/frames-shop`)
  .toString("base64")
  .replace(/=+$/, "");
const KEYS = { apiKey: APP_KEY, apiSecret: APP_SECRET };

let h: InstallHarness;
let jar: CookieJar;
beforeAll(async () => {
  h = await startInstallHarness();
  ({ jar } = await h.install(SHOP));
}, 60_000);
afterAll(() => h.close());

const ancestorsOf = (res: Response) =>
  /frame-ancestors ([^;]+)/.exec(res.headers.get("content-security-policy") ?? "")?.[1] ?? "";

describe("who may frame the settings pages", () => {
  it("frames the standalone page (cookie) nowhere: frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const res = await h.get("/settings", jar);
    expect(res.status).toBe(200);
    expect(ancestorsOf(res)).toBe("'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });

  it("lets the shop's admin frame the embedded page, with no X-Frame-Options against it", async () => {
    const token = await mintSessionToken(SHOP, KEYS);
    const res = await h.get(`/settings?embedded=1&shop=${SHOP}&host=${HOST}&id_token=${token}`);
    expect(res.status).toBe(200);
    expect(ancestorsOf(res).split(" ")).toEqual(
      expect.arrayContaining([`https://${SHOP}`, "https://admin.shopify.com"]),
    );
    expect(res.headers.get("x-frame-options")).toBeNull();
  });

  it("names only a *.myshopify.com shop from the query on the bounce and sign-in pages", async () => {
    const bounce = await h.get(`/settings?embedded=1&shop=${SHOP}&host=${HOST}`);
    expect(await bounce.text()).toContain("shopify.idToken()");
    expect(ancestorsOf(bounce)).toContain(`https://${SHOP}`);
    expect(bounce.headers.get("x-frame-options")).toBeNull();
    for (const shop of [
      "evil.example",
      "frames-shop.myshopify.com.evil.example",
      "frames-shop.myshopify.io",
      encodeURIComponent("frames-shop.myshopify.com https://evil.example"),
      encodeURIComponent("frames-shop.myshopify.com;script-src *"),
    ]) {
      for (const path of [
        `/settings?embedded=1&shop=${shop}&host=${HOST}`,
        `/settings?embedded=1&shop=${shop}&host=${HOST}&bounced=1`,
        `/settings/store?embedded=1&shop=${shop}&host=${HOST}`,
      ]) {
        const res = path.startsWith("/settings/store")
          ? await fetch(new URL(path, h.appUrl), {
              method: "POST",
              headers: { origin: h.appUrl, "content-type": "application/x-www-form-urlencoded" },
              body: "storeId=1",
            })
          : await h.get(path);
        expect(res.status, path).toBe(401);
        expect(ancestorsOf(res), path).toBe("'none'");
        expect(res.headers.get("x-frame-options"), path).toBe("DENY");
        expect(res.headers.get("content-security-policy"), path).not.toContain("evil");
      }
    }
  });

  it("sends no HSTS over plain http (development)", async () => {
    for (const res of [await h.get("/settings", jar), await h.get("/settings")]) {
      expect(res.headers.get("strict-transport-security")).toBeNull();
    }
  });
});

describe("HSTS where the app is served over https", () => {
  let secure: InstallHarness;
  beforeAll(async () => {
    // APP_URL is what decides (production requires https); the harness itself still serves http.
    secure = await startInstallHarness({ env: { APP_URL: "https://connector.example" } });
  }, 60_000);
  afterAll(() => secure.close());

  it("sends Strict-Transport-Security", async () => {
    const res = await secure.get("/settings");
    expect(res.status).toBe(401);
    expect(res.headers.get("strict-transport-security")).toBe(
      "max-age=15552000; includeSubDomains",
    );
  });
});
