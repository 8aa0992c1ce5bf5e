import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import {
  APP_SECRET,
  BROWSER_UA,
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../helpers/install-harness.ts";

/**
 * The settings session belongs to one installation of one shop: an uninstall ends it at once
 * (not 8 hours later), and a reinstall does not revive cookies issued before. Its forms accept
 * form bodies only.
 */
const SHOP = "session-shop.myshopify.com";

let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness({
    provider: { clientId: "session-client", clientSecret: "session-secret-1", stores: [1001] },
  });
});
afterAll(() => h.close());

async function uninstall(shop: string) {
  // The merchant uninstalls in Shopify; the connector confirms it there before acting.
  await h.standIn.uninstallShop(shop, { deliver: false });
  const signed = signWebhook({
    topic: "app/uninstalled",
    shop,
    body: JSON.stringify({ id: 1, myshopify_domain: shop }),
    secret: APP_SECRET,
  });
  const res = await fetch(new URL("/webhooks/shopify", h.appUrl), {
    method: "POST",
    headers: signed.headers,
    body: signed.body,
  });
  expect(res.status).toBe(200);
}

function postForm(jar: CookieJar, type: string | null, body: string) {
  return fetch(new URL("/settings/store", h.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: {
      "user-agent": BROWSER_UA,
      origin: h.appUrl,
      cookie: jar.header(),
      ...(type ? { "content-type": type } : {}),
    },
    body,
  });
}

describe("the settings session", () => {
  it("ends with the uninstall, and a reinstall does not revive the old cookie", async () => {
    const { jar: first } = await h.install(SHOP);
    expect((await h.get("/settings", first)).status).toBe(200);

    await uninstall(SHOP);
    const after = await h.get("/settings", first);
    expect(after.status).toBe(401);
    expect(await after.text()).toContain("Sign in through Shopify");
    expect(
      (await postForm(first, "application/x-www-form-urlencoded", "storeId=1001")).status,
    ).toBe(401);

    const { jar: second } = await h.install(SHOP);
    expect((await h.get("/settings", second)).status).toBe(200);
    expect((await h.get("/settings", first)).status).toBe(401);
  });

  it("answers 415 to a settings POST that is not a form, and changes nothing", async () => {
    const { jar } = await h.install("session-forms.myshopify.com");
    const before = JSON.stringify(await h.ctx.shops.getShop("session-forms.myshopify.com"));
    for (const [type, body] of [
      ["application/json", '{"storeId":1001}'],
      ["text/plain", "storeId=1001"],
      [null, "storeId=1001"],
    ] as const) {
      const res = await postForm(jar, type, body);
      expect(res.status, String(type)).toBe(415);
      const answer = (await res.json()) as { error: { code: string; fields: { path: string }[] } };
      expect(answer.error.code).toBe("unsupported_media_type");
      expect(answer.error.fields[0]?.path).toBe("headers.content-type");
    }
    expect(JSON.stringify(await h.ctx.shops.getShop("session-forms.myshopify.com"))).toBe(before);
    // A real form is read (this shop has no provider credentials yet: the store form says so).
    const form = await postForm(jar, "application/x-www-form-urlencoded", "storeId=1001");
    expect(form.status).toBe(400);
    expect(await form.text()).toMatch(/<!doctype html>/);
  });
});
