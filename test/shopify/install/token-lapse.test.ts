import { mintSessionToken, REFRESH_TOKEN_TTL_MS } from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { signWebhook } from "../../../src/cli/webhook-command.ts";
import { createDeadLetters } from "../../../src/ops/dead-letters.ts";
import { REINSTALL_NEEDED } from "../../../src/shopify/install/shop-tokens.ts";
import { runCli } from "../../helpers/cli.ts";
import {
  APP_KEY,
  APP_SECRET,
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";
import { standInOrder } from "../../helpers/standin-orders.ts";

/**
 * A shop whose tokens lapse while nobody uses them, tried end to end over real HTTP: the
 * stand-in Shopify's clock is moved on (its tokens expire as Shopify's do), the connector's
 * workers, CLI and settings page meet the lapse, and the merchant reopens the app.
 */
const SHOP = "idle-shop.myshopify.com";
const HOST = Buffer.from("admin.shopify.com/store/idle-shop").toString("base64");
const PROVIDER = { clientId: "lapse-client", clientSecret: "lapse-secret-1", stores: [1001] };
const KEYS = { apiKey: APP_KEY, apiSecret: APP_SECRET };

let h: InstallHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The stand-in Shopify's clock: real time plus whatever the test has moved it on by. */
function shopifyClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => (offset += ms) };
}

async function configuredShop(options: { now: () => number }) {
  h = await startInstallHarness({
    workers: true,
    provider: PROVIDER,
    shopifyNow: options.now,
    env: { PROVIDER_RATE_LIMIT: "100000" },
  });
  const harness = h;
  const { jar } = await harness.install(SHOP);
  const form = (path: string, body: Record<string, string>) => harness.postForm(path, body, jar);
  await form("/settings/provider", {
    clientId: PROVIDER.clientId,
    clientSecret: PROVIDER.clientSecret,
    environment: "production",
  });
  await form("/settings/store", { storeId: "1001" });
  expect((await harness.ctx.shops.getShop(SHOP))?.status).toBe("active");
  return { harness, jar, form };
}

/** Sends a signed webhook to the connector's receiver, as Shopify would. */
async function webhook(harness: InstallHarness, topic: string, payload: unknown) {
  const signed = signWebhook({
    topic,
    shop: SHOP,
    body: JSON.stringify(payload),
    secret: APP_SECRET,
  });
  const res = await fetch(new URL("/webhooks/shopify", harness.appUrl), {
    method: "POST",
    headers: signed.headers,
    body: signed.body,
  });
  expect(res.status).toBe(200);
}

const settingsText = async (harness: InstallHarness, jar: CookieJar) =>
  (await (await harness.get("/settings", jar)).text()).replace(/\s+/g, " ");

describe("a shop whose refresh token expired while it was idle", () => {
  it("pauses once with the cause, loses no work, and the merchant reopening the app fixes it", async () => {
    const clock = shopifyClock();
    const { harness, jar, form } = await configuredShop(clock);
    const standIn = harness.standIn.state.shop(SHOP);
    if (!standIn) throw new Error("not installed at the stand-in");
    const order1 = standInOrder(1, "2026-11-10T10:00:00Z").payload;
    standIn.putOrder(order1);
    await webhook(harness, "orders/create", order1);
    await expect.poll(() => harness.provider.state.orders.size, { timeout: 20_000 }).toBe(1);
    for (let i = 2; i <= 6; i++) standIn.putOrder(standInOrder(i, "2026-11-11T10:00:00Z").payload);

    // Ninety-one days without a call: the access token and the refresh token have both ended.
    clock.advance(REFRESH_TOKEN_TTL_MS + 86_400_000);

    // A refund on order 1: its full state must be read from the Admin API.
    await webhook(harness, "refunds/create", {
      id: 9001,
      order_id: 1,
      processed_at: new Date().toISOString(),
      created_at: new Date().toISOString(),
    });
    // A backfill of past orders: it pages through the Admin API.
    expect((await form("/settings/backfill", { since: "2026-11-01" })).status).toBe(303);
    // A new order while the shop is paused.
    const order7 = standInOrder(7, "2026-11-12T10:00:00Z").payload;
    standIn.putOrder(order7);
    await webhook(harness, "orders/create", order7);

    await expect
      .poll(async () => (await harness.ctx.shops.getShop(SHOP))?.pausedReason, { timeout: 20_000 })
      .toBe(REINSTALL_NEEDED);
    // The backfill waits (paused) rather than failing or retrying against Shopify.
    await expect
      .poll(async () => (await harness.ctx.backfills.latest(SHOP))?.status, { timeout: 20_000 })
      .toBe("paused");
    // The orders that needed the shop wait as dead letters that name the cause.
    const deadLetters = createDeadLetters(harness.ctx);
    await expect
      .poll(async () => (await deadLetters.list({ shop: SHOP })).total, { timeout: 20_000 })
      .toBe(2);
    for (const entry of (await deadLetters.list({ shop: SHOP })).entries) {
      expect(entry.reason).toContain("open the app from the Shopify admin");
    }
    // One refused refresh, not a storm.
    expect(standIn.refusedRefreshes).toBe(1);

    // The merchant's page and the operator's commands say the same one thing.
    expect(await settingsText(harness, jar)).toContain(
      "Open the app again from your Shopify admin",
    );
    const status = await runCli(harness.ctx, ["status", "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.stringify(JSON.parse(status.stdout))).toContain(REINSTALL_NEEDED);
    const list = await runCli(harness.ctx, ["shops", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(REINSTALL_NEEDED);

    // The merchant opens the app in the Shopify admin: a new pair, and what waited goes through.
    const q = new URLSearchParams({
      embedded: "1",
      shop: SHOP,
      host: HOST,
      id_token: await mintSessionToken(SHOP, KEYS),
    });
    expect((await harness.get(`/settings?${q.toString()}`)).status).toBe(200);
    expect((await harness.ctx.shops.getShop(SHOP))?.status).toBe("active");
    await expect.poll(() => harness.provider.state.orders.size, { timeout: 30_000 }).toBe(7);
    await expect
      .poll(async () => (await harness.ctx.backfills.latest(SHOP))?.status, { timeout: 20_000 })
      .toBe("completed");
    await expect
      .poll(async () => (await deadLetters.list({ shop: SHOP })).total, { timeout: 20_000 })
      .toBe(0);
    expect(standIn.refusedRefreshes).toBe(1);
  });
});
