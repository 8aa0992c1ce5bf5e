import { readFileSync } from "node:fs";
import { parse } from "csv-parse/sync";
import type { BrowserContext, Frame, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import { ARTIFACTS, chromiumPerFile } from "../../helpers/browser.ts";
import {
  BROWSER_UA,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const SEEDED = 60;
const HANDLE = "registrations-browser";
const SHOP = `${HANDLE}.myshopify.com`;

let context: BrowserContext | undefined;
let h: InstallHarness | undefined;
const browser = chromiumPerFile({ embedded: true }, () => [context, h]);

/** The shop's provider settings, as the settings page saves them once verified. */
async function connect(harness: InstallHarness) {
  await harness.ctx.shops.updateSettings(SHOP, {
    providerClientId: harness.provider.clientId,
    providerClientSecretSealed: harness.ctx.secrets.seal(
      harness.provider.clientSecret,
      sealedFor.providerClientSecret(SHOP),
    ),
    storeId: 1001,
    storeCurrency: "USD",
  });
}

/** The external IDs in the table, in order. */
const shown = (where: Page | Frame) => where.locator("tbody tr td:first-child").allTextContents();
const newest = (from: number, count: number) =>
  Array.from({ length: count }, (_, k) => `REG-1001-${from - k}`);

async function csvOf(download: import("playwright-core").Download) {
  const path = await download.path();
  return parse(readFileSync(path), { columns: true, bom: true }) as Record<string, string>[];
}

describe("the Registrations tab in headless Chromium", () => {
  it("opens from the tab bar, pages with Next and Previous, changes the page size and downloads the CSV", async () => {
    h = await startInstallHarness({ provider: { stores: [1001], seedRegistrations: SEEDED } });
    const harness = h;
    context = await browser.newContext({ userAgent: BROWSER_UA, acceptDownloads: true });
    const page = await context.newPage();
    await page.goto(`${harness.appUrl}/shopify/install?shop=${SHOP}`);
    await expect.poll(() => new URL(page.url()).pathname).toBe("/settings");
    await connect(harness);

    await page.getByRole("link", { name: "Registrations", exact: true }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe("/settings/registrations");
    expect(
      await page
        .getByRole("link", { name: "Registrations", exact: true })
        .getAttribute("aria-current"),
    ).toBe("page");
    expect(await shown(page)).toEqual(newest(60, 25));
    expect(await page.getByRole("link", { name: "Previous" }).count()).toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}/registrations-1-first-page.png`, fullPage: true });

    await page.getByRole("link", { name: "Next" }).click();
    await expect.poll(() => shown(page)).toEqual(newest(35, 25));
    await page.getByRole("link", { name: "Next" }).click();
    await expect.poll(() => shown(page)).toEqual(newest(10, 10));
    expect(await page.getByRole("link", { name: "Next" }).count()).toBe(0);
    await page.getByRole("link", { name: "Previous" }).click();
    await expect.poll(() => shown(page)).toEqual(newest(35, 25));
    await page.getByRole("link", { name: "Previous" }).click();
    await expect.poll(() => shown(page)).toEqual(newest(60, 25));

    await page.getByLabel("Rows per page").selectOption("10");
    await page.getByLabel("Channel").fill("retail");
    await page.getByRole("button", { name: "Show" }).click();
    await expect
      .poll(() => shown(page))
      .toEqual([60, 57, 54, 51, 48, 45, 42, 39, 36, 33].map((i) => `REG-1001-${i}`));
    await page.screenshot({ path: `${ARTIFACTS}/registrations-2-filtered.png`, fullPage: true });

    const [filtered] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download these registrations (CSV)" }).click(),
    ]);
    expect(filtered.suggestedFilename()).toMatch(
      /^registrations-registrations-browser-\d{4}-\d{2}-\d{2}\.csv$/,
    );
    const retail = await csvOf(filtered);
    expect(retail).toHaveLength(20);
    expect(new Set(retail.map((r) => r.Channel))).toEqual(new Set(["retail"]));

    await page.getByLabel("Channel").fill("");
    await page.getByRole("button", { name: "Show" }).click();
    const [all] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Download all registrations (CSV)" }).click(),
    ]);
    const rows = await csvOf(all);
    expect(rows.map((r) => r["External ID"])).toEqual(newest(60, 60));
    // The page stayed where it was: a download does not navigate.
    expect(new URL(page.url()).pathname).toBe("/settings/registrations");
  }, 60_000);

  it("works inside the Shopify admin's frame: signed links, paging and the download, no cookie", async () => {
    h = await startInstallHarness({ provider: { stores: [1001], seedRegistrations: SEEDED } });
    const harness = h;
    context = await browser.newContext({ userAgent: BROWSER_UA, acceptDownloads: true });
    const page = await context.newPage();
    const standIn = new URL(harness.standIn.url);
    await page.goto(`http://localhost:${standIn.port}/store/${HANDLE}/apps/order-sync`);
    const origin = new URL(harness.appUrl).origin;
    const appFrame = async (path: string) => {
      await expect
        .poll(() =>
          page
            .frames()
            .some((f) => new URL(f.url()).pathname === path && f.url().startsWith(origin)),
        )
        .toBe(true);
      const frame = page.frames().find((f) => f.url().startsWith(`${origin}${path}`));
      if (!frame) throw new Error(`no frame at ${path}`);
      return frame;
    };
    let frame = await appFrame("/settings");
    await expect.poll(() => frame.getByText(`Settings for ${SHOP}`).count()).toBe(1);
    await connect(harness);

    await frame.getByRole("link", { name: "Registrations", exact: true }).click();
    frame = await appFrame("/settings/registrations");
    await expect.poll(() => shown(frame)).toEqual(newest(60, 25));
    const url = new URL(frame.url());
    expect(url.searchParams.get("embedded")).toBe("1");
    expect(url.searchParams.get("shop")).toBe(SHOP);
    expect(url.searchParams.get("id_token")).not.toBeNull();

    await frame.getByRole("link", { name: "Next" }).click();
    await expect.poll(() => shown(frame)).toEqual(newest(35, 25));
    await frame.getByRole("link", { name: "Previous" }).click();
    await expect.poll(() => shown(frame)).toEqual(newest(60, 25));
    await page.screenshot({ path: `${ARTIFACTS}/registrations-3-embedded.png`, fullPage: true });

    const [download] = await Promise.all([
      page.waitForEvent("download"),
      frame.getByRole("link", { name: "Download all registrations (CSV)" }).click(),
    ]);
    expect((await csvOf(download)).map((r) => r["External ID"])).toEqual(newest(60, 60));

    // Back to the settings tab, still inside the admin; no cookie was ever set.
    await frame.getByRole("link", { name: "Settings", exact: true }).click();
    frame = await appFrame("/settings");
    await expect.poll(() => frame.getByText("Provider connection").count()).toBeGreaterThan(0);
    expect(new URL(frame.url()).searchParams.get("embedded")).toBe("1");
    expect(await context.cookies(harness.appUrl)).toEqual([]);
  }, 60_000);
});
