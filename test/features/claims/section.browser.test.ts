import type { BrowserContext, Frame, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { chromiumPerFile } from "../../helpers/browser.ts";
import {
  BROWSER_UA,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const HANDLE = "claims-embedded";
const SHOP = `${HANDLE}.myshopify.com`;
const PROVIDER = { clientId: "claims-client", clientSecret: "claims-secret-7d2e" };

/** Pages load slowly on a busy machine: polls wait up to 10 s. */
const SLOW = { timeout: 10_000 };

let context: BrowserContext | undefined;
let h: InstallHarness | undefined;
const browser = chromiumPerFile({ embedded: true }, () => [context, h]);

async function appFrame(page: Page, harness: InstallHarness): Promise<Frame> {
  const origin = new URL(harness.appUrl).origin;
  await expect
    .poll(() => page.frames().some((f) => f.url().startsWith(`${origin}/settings`)), SLOW)
    .toBe(true);
  const frame = page.frames().find((f) => f.url().startsWith(`${origin}/settings`));
  if (!frame) throw new Error("the app frame did not load");
  return frame;
}

/** The app opened in the stand-in admin (a second site), credentials and store saved. */
async function openConfigured(harness: InstallHarness): Promise<{ page: Page; frame: Frame }> {
  context = await browser.newContext({ userAgent: BROWSER_UA });
  const page = await context.newPage();
  const standIn = new URL(harness.standIn.url);
  await page.goto(`http://localhost:${standIn.port}/store/${HANDLE}/apps/order-sync`);
  let frame = await appFrame(page, harness);
  await frame.getByLabel("Client ID").fill(PROVIDER.clientId);
  await frame.getByLabel("Client secret").fill(PROVIDER.clientSecret);
  await frame.getByLabel("Production").check();
  await frame.getByRole("button", { name: "Verify and save" }).click();
  frame = await appFrame(page, harness);
  await expect.poll(() => frame.getByText("Credentials verified").count(), SLOW).toBe(1);
  await frame.getByLabel("Store 1001").check();
  await frame.getByRole("button", { name: "Use this store" }).click();
  frame = await appFrame(page, harness);
  await expect
    .poll(() => frame.getByText("Orders are syncing to the provider.").count(), SLOW)
    .toBe(1);
  return { page, frame };
}

describe("the Claims section inside the Shopify admin (headless Chromium)", () => {
  it("asks Shopify for write_orders with App Bridge, then turns order tagging on", async () => {
    h = await startInstallHarness({ provider: { ...PROVIDER, stores: [1001] } });
    const harness = h;
    const { page } = await openConfigured(harness);
    let frame = await appFrame(page, harness);
    expect(harness.standIn.state.shop(SHOP)?.scopes).not.toContain("write_orders");
    await expect.poll(() => frame.locator("[data-needs-scope]").count(), SLOW).toBe(1);

    // The webhook secret, entered in the frame.
    await frame.getByLabel("Webhook signing secret").fill("whsec_embedded_0123456789");
    await frame.getByRole("button", { name: "Save secret" }).click();
    frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText("Webhook signing secret saved.").count(), SLOW).toBe(1);

    await frame.getByRole("button", { name: "Allow order tagging" }).click();
    frame = await appFrame(page, harness);
    await expect.poll(() => frame.getByText("Shopify orders will be tagged").count(), SLOW).toBe(1);
    expect(harness.standIn.state.shop(SHOP)?.scopes).toContain("write_orders");
    expect(await harness.ctx.claims.tagsOrders(SHOP)).toBe(true);
    expect((await harness.ctx.shops.getShop(SHOP))?.scopes).toContain("write_orders");
    expect(await frame.locator("[data-needs-scope]").count()).toBe(0);
    expect(await frame.getByLabel(/Tag Shopify orders/).isChecked()).toBe(true);
  }, 60_000);

  it("leaves tagging off when the merchant declines Shopify's request", async () => {
    h = await startInstallHarness({ provider: { ...PROVIDER, stores: [1001] } });
    const harness = h;
    const { page } = await openConfigured(harness);
    const standInShop = harness.standIn.state.shop(SHOP);
    if (standInShop) standInShop.declineScopeRequests = true;
    const frame = await appFrame(page, harness);
    const decision = page.waitForResponse((response) =>
      response.url().includes("/_standin/admin/scopes"),
    );
    await frame.getByRole("button", { name: "Allow order tagging" }).click();
    // Shopify's answer has come back to the page: declined. Nothing is sent: the page stays as
    // it was, tagging off.
    expect(await (await decision).json()).toMatchObject({ result: "declined-all" });
    expect(await harness.ctx.claims.tagsOrders(SHOP)).toBe(false);
    expect(await frame.locator("[data-needs-scope]").count()).toBe(1);
  }, 60_000);
});
