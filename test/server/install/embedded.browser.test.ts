import type { BrowserContext, Frame, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { ARTIFACTS, chromiumPerFile } from "../../helpers/browser.ts";
import {
  BROWSER_UA,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const HANDLE = "embedded-shop";
const SHOP = `${HANDLE}.myshopify.com`;
const PROVIDER = { clientId: "embedded-client", clientSecret: "embedded-secret-5a1c" };

let context: BrowserContext | undefined;
let h: InstallHarness | undefined;
const browser = chromiumPerFile({ embedded: true }, () => [context, h]);

/**
 * The stand-in admin runs at `localhost`, the connector at `127.0.0.1`: two sites, so the app's
 * frame is a third-party context, as the connector is inside admin.shopify.com.
 */
function adminUrl(harness: InstallHarness): string {
  const standIn = new URL(harness.standIn.url);
  return `http://localhost:${standIn.port}/store/${HANDLE}/apps/order-sync`;
}

async function appFrame(page: Page, harness: InstallHarness): Promise<Frame> {
  const origin = new URL(harness.appUrl).origin;
  await expect
    .poll(() => page.frames().some((f) => f.url().startsWith(`${origin}/settings`)))
    .toBe(true);
  const frame = page.frames().find((f) => f.url().startsWith(`${origin}/settings`));
  if (!frame) throw new Error("the app frame did not load");
  return frame;
}

describe("the settings page embedded in the Shopify admin (headless Chromium)", () => {
  it("installs through the admin by token exchange and saves settings with cookies blocked", async () => {
    h = await startInstallHarness({
      provider: { ...PROVIDER, stores: [1001], storeCurrency: { 1001: "USD" } },
    });
    const harness = h;
    context = await browser.newContext({ userAgent: BROWSER_UA });
    const page = await context.newPage();
    const refusedFrames: string[] = [];
    page.on("console", (m) => {
      if (/frame-ancestors|Refused to/.test(m.text())) refusedFrames.push(m.text());
    });

    // Opening the app in the admin: Shopify installs it (managed installation), frames the
    // app URL with an id_token, and the connector exchanges that token for an offline one.
    await page.goto(adminUrl(harness));
    let frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText(`Settings for ${SHOP}`).count()).toBe(1);
    const stored = await harness.ctx.shops.getShop(SHOP);
    expect(stored?.status).toBe("paused");
    expect(stored?.accessTokenExpiresAt).not.toBeNull();
    expect(stored?.refreshTokenSealed).not.toBeNull();
    const standInShop = harness.standIn.state.shop(SHOP);
    expect(standInShop?.tokenExchanges).toBe(1);
    expect(standInShop?.subscriptions.length).toBeGreaterThan(5);
    // The page is App Bridge's: the API key meta and the stand-in App Bridge script.
    expect(await frame.locator('meta[name="shopify-api-key"]').getAttribute("content")).toBe(
      "install-test-api-key",
    );
    expect(await frame.evaluate("typeof window.shopify")).toBe("object");

    // The frame is a third-party context: the browser gives it no cookie access (over http a
    // cross-site frame could not keep one anyway, and third-party cookies are blocked besides).
    expect(await frame.evaluate("document.hasStorageAccess()")).toBe(false);
    await page.screenshot({ path: `${ARTIFACTS}/embedded-1-installed.png`, fullPage: true });

    // Save provider credentials inside the frame: the form carries a fresh session token.
    await frame.getByLabel("Client ID").fill(PROVIDER.clientId);
    await frame.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await frame.getByLabel("Production").check();
    await frame.getByRole("button", { name: "Verify and save" }).click();
    frame = await appFrame(page, harness);
    await expect
      .poll(() => frame.getByText("Credentials verified with the provider").count())
      .toBe(1);
    expect(new URL(frame.url()).searchParams.get("embedded")).toBe("1");
    await frame.getByLabel("Store 1001").check();
    await frame.getByRole("button", { name: "Use this store" }).click();
    frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText("Orders are syncing to the provider.").count()).toBe(1);
    expect(await harness.ctx.shops.getShop(SHOP)).toMatchObject({
      storeId: 1001,
      providerClientId: PROVIDER.clientId,
      status: "active",
    });
    // Every request after the first asked the admin for a session token; no cookie was used.
    expect(standInShop?.sessionTokensIssued).toBeGreaterThanOrEqual(2);
    expect(await context.cookies(harness.appUrl)).toEqual([]);
    expect(refusedFrames).toEqual([]);
    await page.screenshot({ path: `${ARTIFACTS}/embedded-2-saved.png`, fullPage: true });

    // A reload of the frame a while later (its id_token gone): the bounce page gets a fresh one.
    const stale = new URL(frame.url());
    stale.searchParams.delete("id_token");
    stale.searchParams.delete("saved");
    await frame.goto(stale.toString());
    frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText(`Settings for ${SHOP}`).count()).toBe(1);
    expect(new URL(frame.url()).searchParams.get("bounced")).toBe("1");

    // Opening the app again does not exchange again: the shop holds a working token.
    await page.goto(adminUrl(harness));
    frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText("Orders are syncing to the provider.").count()).toBe(1);
    expect(standInShop?.tokenExchanges).toBe(1);
  }, 60_000);

  it("refuses to be framed by anyone but the shop and the Shopify admin", async () => {
    h = await startInstallHarness();
    const harness = h;
    context = await browser.newContext({ userAgent: BROWSER_UA });
    const page = await context.newPage();
    await page.goto(adminUrl(harness));
    await appFrame(page, harness);
    const res = await harness.get(
      `/settings?embedded=1&shop=${SHOP}&host=YWRtaW4uc2hvcGlmeS5jb20vc3RvcmUvZW1iZWRkZWQtc2hvcA`,
    );
    const csp = res.headers.get("content-security-policy") ?? "";
    const ancestors = csp.match(/frame-ancestors ([^;]+)/)?.[1]?.split(" ") ?? [];
    expect(ancestors).toEqual(
      expect.arrayContaining([`https://${SHOP}`, "https://admin.shopify.com"]),
    );
    expect(ancestors.join(" ")).not.toContain("*");
    // A page for no shop (no session, no token) may be framed by nobody.
    const anonymous = await harness.get("/settings");
    expect(anonymous.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  }, 30_000);

  it("keeps what was typed and says so when Shopify gives the page no session token", async () => {
    h = await startInstallHarness({
      provider: { ...PROVIDER, stores: [1001], storeCurrency: { 1001: "USD" } },
    });
    const harness = h;
    context = await browser.newContext({ userAgent: BROWSER_UA });
    const page = await context.newPage();
    await page.goto(adminUrl(harness));
    let frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText(`Settings for ${SHOP}`).count()).toBe(1);
    const posts: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().startsWith(harness.appUrl)) posts.push(r.url());
    });

    // The admin cannot give a token (its own session ended, the network failed).
    await context.route("**/_standin/admin/session-token", (route) =>
      route.fulfill({ status: 401, json: { errors: "not signed in" } }),
    );
    await frame.getByLabel("Client ID").fill(PROVIDER.clientId);
    await frame.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await frame.getByRole("button", { name: "Verify and save" }).click();
    const note = frame.locator("[data-form-note]");
    await expect.poll(() => note.count()).toBe(1);
    expect(await note.getAttribute("role")).toBe("alert");
    expect(await note.textContent()).toContain(
      "Shopify did not confirm your session, so nothing was saved yet. What you typed is still here: press “Verify and save” again",
    );
    expect(posts).toEqual([]);
    expect(await frame.getByLabel("Client ID").inputValue()).toBe(PROVIDER.clientId);
    expect(await frame.getByLabel("Client secret").inputValue()).toBe(PROVIDER.clientSecret);

    // The admin answers again: the same button saves what was typed.
    await context.unroute("**/_standin/admin/session-token");
    await frame.getByRole("button", { name: "Verify and save" }).click();
    frame = await appFrame(page, harness);
    await expect
      .poll(() => frame.getByText("Credentials verified with the provider").count())
      .toBe(1);
    expect(posts).toHaveLength(1);
    expect((await harness.ctx.shops.getShop(SHOP))?.providerClientId).toBe(PROVIDER.clientId);
  }, 60_000);
});
