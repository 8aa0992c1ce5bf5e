import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { ARTIFACTS, chromiumPerFile } from "../../helpers/browser.ts";
import {
  BROWSER_UA,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

/**
 * The settings page as a merchant meets it on first contact, outside the Shopify admin: on a
 * phone, with the keyboard, with mistakes in the forms and a session that ends while the page
 * is open.
 */
const SHOP = "first-contact.myshopify.com";
const PROVIDER = { clientId: "first-client", clientSecret: "first-secret-4c2d" };

let context: BrowserContext | undefined;
let h: InstallHarness | undefined;
const browser = chromiumPerFile({}, () => [context, h]);

/** Installs the shop through OAuth in a new browser context; the page is on /settings. */
async function installed(
  viewport = { width: 1280, height: 900 },
  provider: { stores?: number[] } = {},
): Promise<{
  page: Page;
  harness: InstallHarness;
}> {
  h = await startInstallHarness({
    provider: {
      ...PROVIDER,
      stores: [1001, 1002],
      storeCurrency: { 1001: "USD", 1002: "USD" },
      storeTimezone: { 1001: "America/Argentina/ComodRivadavia", 1002: "America/New_York" },
      ...provider,
    },
  });
  context = await browser.newContext({ userAgent: BROWSER_UA, viewport });
  const page = await context.newPage();
  await page.goto(`${h.appUrl}/shopify/install?shop=${SHOP}`);
  await expect.poll(() => new URL(page.url()).pathname).toBe("/settings");
  await expect.poll(() => page.getByText(`Settings for ${SHOP}`).count()).toBe(1);
  return { page, harness: h };
}

/** The focused field's id, whether it is marked invalid, and the text that describes it. */
const focusedField = (page: Page) =>
  page.evaluate<{ id: string; invalid: string | null; description: string }>(`(() => {
    const el = document.activeElement;
    const ids = (el.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
    return {
      id: el.id,
      invalid: el.getAttribute("aria-invalid"),
      description: ids.map((id) => document.getElementById(id)?.textContent ?? "").join(" "),
    };
  })()`);

/** What sticks out of the page or of a section at this width (nothing, on a good page). */
const overflowing = (page: Page) =>
  page.evaluate<string[]>(`(() => {
    const out = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) out.push("page " + root.scrollWidth + "px");
    for (const section of document.querySelectorAll("section")) {
      if (section.scrollWidth > section.clientWidth) {
        out.push(section.getAttribute("aria-labelledby") + " " + section.scrollWidth + "px");
      }
    }
    return out;
  })()`);

describe("the settings page on first contact (headless Chromium)", () => {
  it("fits a 320px phone screen: wide tables scroll inside their card", async () => {
    const { page } = await installed({ width: 320, height: 640 });
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => page.getByText("America/Argentina/ComodRivadavia").count()).toBe(1);
    expect(await overflowing(page)).toEqual([]);
    await page.screenshot({ path: `${ARTIFACTS}/merchant-phone.png`, fullPage: true });
    // The time zone is still there to read: its table scrolls.
    const wrap = page.locator("section[aria-labelledby=store-title] .table-wrap");
    expect(await wrap.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(true);
  }, 60_000);

  it("ties each refusal to its field, keeps what was typed, and takes padded or pasted values", async () => {
    const { page, harness } = await installed();
    const focused = () => focusedField(page);

    // A wrong secret: the keyboard lands on the client ID, both fields say what went wrong.
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill("not-the-secret");
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBe(1);
    await expect.poll(focused).toEqual({
      id: "clientId",
      invalid: "true",
      description: expect.stringContaining("did not accept this client ID and secret"),
    });
    expect(await page.getByLabel("Client secret").getAttribute("aria-invalid")).toBe("true");
    expect(await page.getByLabel("Client ID").inputValue()).toBe(PROVIDER.clientId);

    // Unicode comes back as typed, not mangled.
    await page.getByLabel("Client ID").fill("clïent-☃-東京");
    await page.getByLabel("Client secret").fill("x");
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => page.getByLabel("Client ID").inputValue()).toBe("clïent-☃-東京");

    // Values pasted with spaces or a line break around them are the values.
    await page.getByLabel("Client ID").fill(`  ${PROVIDER.clientId} `);
    await page.getByLabel("Client secret").fill(` ${PROVIDER.clientSecret}  `);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect
      .poll(() => page.getByText("Credentials verified with the provider").count())
      .toBe(1);
    expect((await harness.ctx.shops.getShop(SHOP))?.providerClientId).toBe(PROVIDER.clientId);

    // A location ID the browser takes as a number ("1e3") is not an ID: refused, the field
    // focused and described, every other value kept as typed, nothing saved.
    await page.getByLabel("Main warehouse").fill("1e3");
    await page.getByLabel("Downtown store").fill("42");
    await page.getByLabel(/Default fulfillment location ID/).fill("7");
    await page.getByRole("button", { name: "Save locations" }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBe(1);
    await expect.poll(focused).toEqual({
      id: "location-4001",
      invalid: "true",
      description: expect.stringContaining("fulfillment location ID marked below must be"),
    });
    expect(await page.getByLabel("Downtown store").inputValue()).toBe("42");
    expect(await page.getByLabel(/Default fulfillment location ID/).inputValue()).toBe("7");
    expect(await page.getByLabel("Downtown store").getAttribute("aria-invalid")).toBeNull();
    expect((await harness.ctx.shops.getShop(SHOP))?.locationMap).toEqual({});
    await page.screenshot({ path: `${ARTIFACTS}/merchant-refused-location.png`, fullPage: true });

    // Fixed: saved, and the page says so.
    await page.getByLabel("Main warehouse").fill("1000");
    await page.getByRole("button", { name: "Save locations" }).click();
    await expect.poll(() => page.getByText("Locations saved.").count()).toBe(1);
    expect((await harness.ctx.shops.getShop(SHOP))?.locationMap).toEqual({
      "4001": 1000,
      "4002": 42,
    });
  }, 60_000);

  it("marks the confirmation, not the secret, when a shared webhook secret is replaced without it", async () => {
    const { page, harness } = await installed();
    // Another shop on the same provider account has saved the account's signing secret.
    const other = "other-shop.myshopify.com";
    const { jar } = await harness.install(other);
    const credentials = { ...PROVIDER, environment: "production" };
    expect((await harness.postForm("/settings/provider", credentials, jar)).status).toBe(303);
    const first = { webhookSecret: "whsec_other_shop_secret_0001" };
    expect((await harness.postForm("/settings/claims/secret", first, jar)).status).toBe(303);

    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect
      .poll(() => page.getByText("Credentials verified with the provider").count())
      .toBe(1);
    const secret = page.getByLabel(/Webhook signing secret/);
    const confirm = page.getByLabel(/Replace it for every shop on this account/);
    await secret.fill("whsec_this_shop_secret_00002");
    await page.getByRole("button", { name: "Save secret" }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBe(1);
    // The secret was fine: the keyboard lands on the box to tick, which says why.
    await expect
      .poll(() => focusedField(page))
      .toEqual({
        id: "confirmShared",
        invalid: "true",
        description: expect.stringContaining("tick “Replace it for every shop on this account”"),
      });
    expect(await secret.getAttribute("aria-invalid")).toBeNull();
    await page.screenshot({ path: `${ARTIFACTS}/merchant-shared-secret.png`, fullPage: true });

    await confirm.check();
    await secret.fill("whsec_this_shop_secret_00002");
    await page.getByRole("button", { name: "Save secret" }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get("saved")).toBe("claimsSecret");
  }, 60_000);

  it("marks no credential when the provider takes them but they cover no store", async () => {
    const { page, harness } = await installed(undefined, { stores: [] });
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBe(1);
    expect(await page.getByRole("alert").textContent()).toContain(
      "These credentials work, but they do not give access to any store",
    );
    // Neither value is wrong: nothing tells the merchant to change them.
    expect(await page.getByLabel("Client ID").getAttribute("aria-invalid")).toBeNull();
    expect(await page.getByLabel("Client secret").getAttribute("aria-invalid")).toBeNull();
    expect(await page.getByLabel("Client ID").inputValue()).toBe(PROVIDER.clientId);
    expect((await harness.ctx.shops.getShop(SHOP))?.providerClientId ?? null).toBeNull();
  }, 60_000);

  it("marks the product file when its type is refused", async () => {
    const { page } = await installed();
    const file = page.getByLabel(/Product file/);
    await file.setInputFiles({
      name: "products.txt",
      mimeType: "text/plain",
      buffer: Buffer.from("handle,title\nold-mug,Old mug\n"),
    });
    await page.getByRole("button", { name: "Check and import" }).click();
    await expect.poll(() => page.getByRole("alert").count()).toBe(1);
    await expect
      .poll(() => focusedField(page))
      .toEqual({
        id: "catalog-file",
        invalid: "true",
        description: expect.stringContaining("Choose a .csv or a .json file."),
      });
  }, 60_000);

  it("keeps what was typed when the session ended while the page was open, and saves after signing in again", async () => {
    const { page, harness } = await installed();
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    // The session cookie ends (8 hours later, the browser drops it) with the page still open.
    await context?.clearCookies();
    const posts: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST") posts.push(r.url());
    });

    await page.getByRole("button", { name: "Verify and save" }).click();
    const ended = page.locator("[data-form-note]");
    await expect.poll(() => ended.count()).toBe(1);
    expect(await ended.getAttribute("role")).toBe("alert");
    expect(await ended.textContent()).toBe(
      "Your session has ended, so nothing was saved yet. Sign in again in a new tab, then come back here and press “Verify and save” again: what you typed is kept.",
    );
    // Nothing was sent; the page and everything typed are still there.
    expect(posts).toEqual([]);
    expect(new URL(page.url()).pathname).toBe("/settings");
    expect(await page.getByLabel("Client ID").inputValue()).toBe(PROVIDER.clientId);
    expect(await page.getByLabel("Client secret").inputValue()).toBe(PROVIDER.clientSecret);
    // The keyboard is on the way out: the sign-in link.
    expect(await page.evaluate("document.activeElement.textContent")).toBe(
      "Sign in again in a new tab",
    );
    await page.screenshot({ path: `${ARTIFACTS}/merchant-session-ended.png`, fullPage: true });

    // Signing in again in a new tab, then the same button: saved, with what was typed.
    const [signIn] = await Promise.all([
      page.waitForEvent("popup"),
      page.getByRole("link", { name: "Sign in again in a new tab" }).click(),
    ]);
    await expect.poll(() => new URL(signIn.url()).pathname).toBe("/settings");
    await signIn.close();
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect
      .poll(() => page.getByText("Credentials verified with the provider and saved").count())
      .toBe(1);
    expect(await harness.ctx.shops.getShop(SHOP)).toMatchObject({
      providerClientId: PROVIDER.clientId,
    });
    expect(posts).toEqual([`${harness.appUrl}/settings/provider`]);
  }, 60_000);

  it("shows the page as it is now after the back button, not as it was before a save", async () => {
    const { page, harness } = await installed();
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get("saved")).toBe("provider");
    await page.getByLabel("Store 1001").check();
    await page.getByRole("button", { name: "Use this store" }).click();
    await expect.poll(() => page.getByText("Orders are syncing to the provider.").count()).toBe(1);

    // Back to the page before the store was chosen: it is loaded again, as the shop is now.
    await page.goBack();
    await expect.poll(() => new URL(page.url()).searchParams.get("saved")).toBe("provider");
    await expect.poll(() => page.getByText("Orders are syncing to the provider.").count()).toBe(1);
    expect(await page.getByText("Sync is paused").count()).toBe(0);
    // And once more, to the page before the credentials: it lists the stores now.
    await page.goBack();
    await expect.poll(() => new URL(page.url()).search).toBe("");
    await expect.poll(() => page.getByText("Orders are syncing to the provider.").count()).toBe(1);
    expect(await page.getByLabel("Store 1001").isChecked()).toBe(true);
    expect((await harness.get("/settings/session")).headers.get("cache-control")).toBe("no-store");
  }, 60_000);

  it("names every field and button so that each can be told apart by keyboard and screen reader", async () => {
    const { page } = await installed();
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => page.getByLabel("Store 1001").count()).toBe(1);
    const { unlabelled, buttons } = await page.evaluate<{
      unlabelled: string[];
      buttons: string[];
    }>(`(() => ({
      unlabelled: [...document.querySelectorAll("input, select, textarea")]
        .filter((e) => e.type !== "hidden" && e.labels.length === 0 && !e.getAttribute("aria-label"))
        .map((e) => e.outerHTML),
      buttons: [...document.querySelectorAll("button")].map((b) => b.textContent.trim()),
    }))()`);
    expect(unlabelled).toEqual([]);
    // A list of the page's buttons (a screen reader's) says what each one saves.
    const repeated = buttons.filter((name, i) => buttons.indexOf(name) !== i);
    expect(repeated).toEqual([]);
    expect(buttons).toEqual(
      expect.arrayContaining(["Save test orders choice", "Save order tagging"]),
    );
  }, 60_000);

  it("sends a form once when the merchant clicks again while its answer loads", async () => {
    const { page } = await installed();
    await page.getByLabel("Client ID").fill(PROVIDER.clientId);
    await page.getByLabel("Client secret").fill(PROVIDER.clientSecret);
    await page.getByRole("button", { name: "Verify and save" }).click();
    await expect.poll(() => page.getByLabel("Store 1001").count()).toBe(1);
    await page.getByLabel("Store 1001").check();
    await page.getByRole("button", { name: "Use this store" }).click();
    await expect.poll(() => page.getByText("Orders are syncing to the provider.").count()).toBe(1);

    // The server's answer is held until the merchant has clicked twice more.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let sent = 0;
    await page.route("**/settings/backfill", async (route) => {
      sent++;
      await held;
      await route.continue();
    });
    await page.getByLabel("Send orders placed since").fill("2026-10-01");
    const button = page.getByRole("button", { name: "Start sending past orders" });
    await button.scrollIntoViewIfNeeded();
    const box = await button.boundingBox();
    if (!box) throw new Error("the button is not shown");
    const [x, y] = [box.x + box.width / 2, box.y + box.height / 2];
    // A double click, then two more clicks while the page waits for the answer (the mouse
    // itself: a locator's click would wait for the navigation under way).
    await page.mouse.dblclick(x, y);
    await expect.poll(() => sent).toBe(1);
    await page.mouse.click(x, y);
    await page.mouse.click(x, y);
    release();
    await expect.poll(() => page.getByText("Sending past orders has started.").count()).toBe(1);
    expect(sent).toBe(1);
    expect(await page.getByText("Orders since 2026-10-01").count()).toBe(1);
  }, 60_000);
});
