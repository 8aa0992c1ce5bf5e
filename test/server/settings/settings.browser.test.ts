import type { RestOrder } from "@connector/shopify-standin";
import type { BrowserContext } from "playwright-core";
import { describe, expect, it } from "vitest";
import { ARTIFACTS, chromiumPerFile } from "../../helpers/browser.ts";
import {
  BROWSER_UA,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";
import { type ModelOrder, orderPayload } from "../../helpers/shopify-order-builder.ts";

const SHOP = "browser-shop.myshopify.com";
const PROVIDER = { clientId: "browser-client", clientSecret: "browser-secret-77e1" };
const PAST_ORDERS = 6;

const pastOrder = (i: number): ModelOrder => ({
  id: 9_100_000 + i,
  number: 1000 + i,
  email: `buyer${i}@example.com`,
  createdAt: "2026-11-02T10:00:00-05:00",
  updatedAt: `2026-11-02T10:0${i}:00-05:00`,
  cancelledAt: null,
  note: null,
  shippingCents: 500,
  taxBps: 800,
  lines: [
    {
      id: 9_200_000 + i,
      variantId: 5001,
      sku: "TRAIL-42",
      title: "Trail running shoes",
      price: 12900,
      quantity: 1,
      currentQuantity: 1,
    },
  ],
  fulfillments: [],
  locationId: 4001,
});

let context: BrowserContext | undefined;
let h: InstallHarness | undefined;
const browser = chromiumPerFile({}, () => [context, h]);

describe("merchant settings in headless Chromium", () => {
  it("installs, rejects wrong credentials, saves valid ones, maps a location and watches a backfill", async () => {
    h = await startInstallHarness({
      workers: true,
      provider: {
        ...PROVIDER,
        stores: [1001, 1002],
        storeCurrency: { 1001: "USD", 1002: "EUR" },
        storeTimezone: { 1001: "America/New_York", 1002: "Europe/Berlin" },
      },
    });
    const harness = h;
    // The shop has orders from before the install: the backfill must find them.
    harness.standIn.installShop(SHOP);
    for (let i = 1; i <= PAST_ORDERS; i++) {
      await harness.standIn.upsertOrder(SHOP, orderPayload(pastOrder(i)) as RestOrder, {
        deliver: false,
      });
    }

    // A browser user agent: the Shopify library answers bots with 410.
    context = await browser.newContext({ userAgent: BROWSER_UA });
    // In local development (SHOPIFY_ADMIN_URL) the install sends the browser to the stand-in
    // Shopify's authorize page, which approves and redirects back to the callback.
    const page = await context.newPage();

    // Install: authorize → callback → settings.
    await page.goto(`${harness.appUrl}/shopify/install?shop=${SHOP}`);
    await expect.poll(() => new URL(page.url()).pathname).toBe("/settings");
    await expect.poll(() => page.getByText(`Settings for ${SHOP}`).count()).toBe(1);
    expect(harness.standIn.state.shop(SHOP)?.subscriptions.length).toBeGreaterThan(5);
    await page.screenshot({ path: `${ARTIFACTS}/settings-1-installed.png`, fullPage: true });

    // Wrong credentials: refused with a clear message, nothing saved.
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill("not-the-secret");
    await page.getByLabel("Production").check();
    await page.getByRole("button", { name: "Verify and save" }).click();
    const alert = page.getByRole("alert");
    await expect
      .poll(() => alert.first().textContent())
      .toContain("did not accept this client ID and secret for the production environment");
    expect((await harness.ctx.shops.getShop(SHOP))?.providerClientSecretSealed).toBeNull();
    await page.screenshot({
      path: `${ARTIFACTS}/settings-2-wrong-credentials.png`,
      fullPage: true,
    });

    // Valid credentials: the stores the token covers, with a warning on the EUR one.
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect
      .poll(() => page.getByText("Credentials verified with the provider").count())
      .toBe(1);
    expect(await page.getByText("Europe/Berlin").count()).toBe(1);
    expect(await page.getByText("This store uses EUR, your shop uses USD").isVisible()).toBe(true);
    await page.getByLabel("Store 1001").check();
    await page.getByRole("button", { name: "Use this store" }).click();
    await expect.poll(() => page.getByText("Orders are syncing to the provider.").count()).toBe(1);
    await page.screenshot({ path: `${ARTIFACTS}/settings-3-store-chosen.png`, fullPage: true });

    // Protection variant and location mapping.
    await page.getByLabel(/Standard/).check();
    await page.getByRole("button", { name: "Save protection variants" }).click();
    await expect.poll(() => page.getByText("Protection variants saved.").count()).toBe(1);
    await page.getByLabel("Main warehouse").fill("77");
    await page.getByLabel(/Default fulfillment location ID/).fill("77");
    await page.getByRole("button", { name: "Save locations" }).click();
    await expect.poll(() => page.getByText("Locations saved.").count()).toBe(1);
    expect(await harness.ctx.shops.getShop(SHOP)).toMatchObject({
      storeId: 1001,
      protectionVariantIds: ["999"],
      locationMap: { "4001": 77 },
      status: "active",
    });

    // Backfill from a date before the past orders, then watch it finish on the page.
    await page.getByLabel("Send orders placed since").fill("2026-10-01");
    await page.getByRole("button", { name: "Start sending past orders" }).click();
    await expect.poll(() => page.getByText("Sending past orders has started.").count()).toBe(1);
    await expect
      .poll(() => page.locator("#backfill-text").textContent(), { timeout: 20_000 })
      .toMatch(
        new RegExp(
          `^Done: all ${PAST_ORDERS} past orders read and queued for sync, finished \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC$`,
        ),
      );
    await page.screenshot({ path: `${ARTIFACTS}/settings-4-backfill.png`, fullPage: true });

    // The orders reach the provider; the counts say so after a reload.
    await expect
      .poll(async () => (await harness.ctx.links.countByResult(SHOP)).synced, { timeout: 20_000 })
      .toBe(PAST_ORDERS);
    await page.reload();
    expect(await page.locator('[data-count="synced"] strong').textContent()).toBe(
      String(PAST_ORDERS),
    );
    await page.screenshot({ path: `${ARTIFACTS}/settings-5-synced.png`, fullPage: true });
  }, 60_000);
});
