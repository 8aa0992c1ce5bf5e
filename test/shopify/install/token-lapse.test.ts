import {
  mintSessionToken,
  NON_EXPIRING_REFUSED_FROM,
  REFRESH_TOKEN_TTL_MS,
} from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { signWebhook } from "../../../src/cli/webhook-command.ts";
import { startSweepWorker } from "../../../src/jobs/sweep-worker.ts";
import { createLogger } from "../../../src/lib/logger.ts";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import { createDeadLetters } from "../../../src/ops/dead-letters.ts";
import { RECONNECT_HINT, ShopifyTokenError } from "../../../src/shopify/admin-client.ts";
import { AWAITING_SETTINGS } from "../../../src/shopify/install/index.ts";
import { RECONNECT_NEEDED, ShopTokens } from "../../../src/shopify/install/shop-tokens.ts";
import { captureLogs } from "../../helpers/captured-logs.ts";
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

/** Every token the stand-in hands out: non-expiring, expiring access and refresh tokens. */
const ANY_TOKEN = /shp(?:at|rt)_[0-9a-z_]+/;

let h: InstallHarness | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  // No line of any test here names a token, at debug level.
  const text = logs?.read() ?? "";
  logs?.remove();
  logs = undefined;
  expect(text.match(ANY_TOKEN)).toBeNull();
});

/** The connector with the stand-in Shopify, its log lines kept (debug level) to be scanned. */
async function harnessWith(options: Parameters<typeof startInstallHarness>[0] = {}) {
  logs = captureLogs("token-lapse");
  h = await startInstallHarness({
    ...options,
    logDestination: logs.destination,
    env: { LOG_LEVEL: "debug", ...options.env },
  });
  return h;
}

/** The stand-in Shopify's clock: real time plus whatever the test has moved it on by. */
function shopifyClock() {
  let offset = 0;
  return { now: () => Date.now() + offset, advance: (ms: number) => (offset += ms) };
}

async function configuredShop(options: { now: () => number }) {
  const harness = await harnessWith({
    workers: true,
    provider: PROVIDER,
    shopifyNow: options.now,
    env: { PROVIDER_RATE_LIMIT: "100000" },
  });
  const { jar } = await harness.install(SHOP);
  const form = (path: string, body: Record<string, string>) => harness.postForm(path, body, jar);
  await harness.connect(jar, PROVIDER, 1001);
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
      .toBe(RECONNECT_NEEDED);
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
      expect(entry.reason).toContain(RECONNECT_HINT);
      expect(entry.reason).not.toMatch(ANY_TOKEN);
    }
    // One refused refresh, not a storm.
    expect(standIn.refusedRefreshes).toBe(1);

    // The merchant's page and the operator's commands say the same one thing.
    expect(await settingsText(harness, jar)).toContain(
      "Open the app again from your Shopify admin",
    );
    const status = await runCli(harness.ctx, ["status", "--json"]);
    expect(status.code).toBe(0);
    expect(JSON.stringify(JSON.parse(status.stdout))).toContain(RECONNECT_NEEDED);
    const list = await runCli(harness.ctx, ["shops", "list", "--json"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(RECONNECT_NEEDED);
    const dlq = await runCli(harness.ctx, ["dlq", "list", "--shop", SHOP, "--json"]);
    expect(dlq.stdout).toContain(RECONNECT_HINT);
    // A resync from the CLI reads the Admin API: one line with the cause and the fix.
    const resync = await runCli(harness.ctx, ["resync", "--shop", SHOP, "--order", "1"], {
      SHOPIFY_ADMIN_URL: harness.standIn.url,
      SHOPIFY_API_KEY: harness.ctx.config.shopifyApiKey,
      ENCRYPTION_KEY: harness.ctx.config.encryptionKey,
    });
    expect(resync.code).toBe(1);
    expect(resync.stderr.trim()).toBe(
      `connector: Shopify no longer accepts the app's token for ${SHOP}: ${RECONNECT_HINT} to reconnect it`,
    );
    for (const out of [status, list, dlq, resync])
      expect(out.stdout + out.stderr).not.toMatch(ANY_TOKEN);

    // The merchant opens the app in the Shopify admin: a new pair, and what waited goes through
    // (a job the worker role's maintenance worker runs).
    await harness.maintenanceWorker();
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

const SHOP_QUERY = "query { shop { currencyCode } }";

describe("the merchant is the first to meet the lapse", () => {
  it("reconnects the shop on the first page load in the Shopify admin", async () => {
    const clock = shopifyClock();
    const { harness } = await configuredShop(clock);
    const standIn = harness.standIn.state.shop(SHOP);
    if (!standIn) throw new Error("not installed at the stand-in");
    // Ninety-one days nobody used the shop: both tokens ended at Shopify, and the access
    // token's refresh time passed long ago.
    clock.advance(REFRESH_TOKEN_TTL_MS + 86_400_000);
    await harness.ctx.shops.updateSettings(SHOP, {
      accessTokenRefreshAt: new Date(Date.now() - 1).toISOString(),
    });
    const q = new URLSearchParams({
      embedded: "1",
      shop: SHOP,
      host: HOST,
      id_token: await mintSessionToken(SHOP, KEYS),
    });
    const page = await harness.get(`/settings?${q.toString()}`);
    expect(page.status).toBe(200);
    const text = (await page.text()).replace(/\s+/g, " ");
    expect(text).toContain("Orders are syncing to the provider.");
    expect(text).not.toContain("Open the app again from your Shopify admin");
    expect(text).not.toContain("did not return your products and locations");
    expect((await harness.ctx.shops.getShop(SHOP))?.status).toBe("active");
    expect(standIn.refusedRefreshes).toBe(1);
  });
});

describe("answers Shopify acted on but the connector never got", () => {
  it("retries a refresh whose connection was reset after Shopify rotated, and keeps the shop", async () => {
    const harness = await harnessWith();
    await harness.install(SHOP);
    const standIn = harness.standIn.state.shop(SHOP);
    if (!standIn) throw new Error("not installed");
    await harness.ctx.shops.updateSettings(SHOP, {
      accessTokenRefreshAt: new Date(Date.now() - 1).toISOString(),
    });
    standIn.resetRefreshAnswers = 1;
    const admin = async () =>
      harness.ctx.shopifyAdmin.for((await harness.ctx.shops.getShop(SHOP)) ?? never());
    const lost = await (await admin()).request(SHOP_QUERY).catch((error: Error) => error);
    expect(lost).toBeInstanceOf(Error);
    expect(String((lost as Error).message)).not.toMatch(ANY_TOKEN);
    // Shopify rotated; the refresh token the connector still holds stays valid until the new
    // one is used: the next call refreshes with it and works.
    expect((await (await admin()).request(SHOP_QUERY)).data).toMatchObject({
      shop: { currencyCode: "USD" },
    });
    expect(standIn.refreshes).toBe(2);
    expect(standIn.refusedRefreshes).toBe(0);
    // Still waiting for its provider settings only, not for the merchant to reconnect.
    expect((await harness.ctx.shops.getShop(SHOP))?.pausedReason).toBe(AWAITING_SETTINGS);
  });
});

describe("two processes refreshing one shop", () => {
  it("keeps the newer pair when a refresh answers after its lock ran out", async () => {
    const harness = await harnessWith();
    await harness.install(SHOP);
    const standIn = harness.standIn.state.shop(SHOP);
    if (!standIn) throw new Error("not installed");
    const makeDue = () =>
      harness.ctx.shops.updateSettings(SHOP, {
        accessTokenRefreshAt: new Date(Date.now() - 1).toISOString(),
      });
    await makeDue();
    // Two worker processes' token keepers on the same database and Redis, with a short lock.
    const tokens = () =>
      new ShopTokens({
        shopify: harness.ctx.shopifyAdmin.shopify,
        shops: harness.ctx.shops,
        secrets: harness.ctx.secrets,
        redis: harness.ctx.redis,
        prefix: harness.ctx.prefix,
        logger: createLogger("silent"),
        lockMs: 300,
      });
    const [slow, fast] = [tokens(), tokens()];
    // The first process's refresh reaches Shopify, which rotates, and its answer is held.
    standIn.holdRefreshAnswers = 1;
    const first = slow.current(SHOP);
    await expect.poll(() => standIn.refreshes).toBe(1);
    const lock = `${harness.ctx.prefix}:shopify-refresh:${SHOP}`;
    await expect.poll(() => harness.ctx.redis.exists(lock)).toBe(0);
    // Its lock ran out: the second process refreshes and stores its pair.
    const second = await fast.current(SHOP);
    expect(standIn.refreshes).toBe(2);
    standIn.releaseRefreshAnswers();
    // The late answer does not overwrite it: both use the stored, newer token.
    expect(await first).toBe(second);
    expect(standIn.acceptsToken(second ?? "")).toBe(true);
    // And the stored refresh token is one Shopify still takes.
    await makeDue();
    expect(await fast.current(SHOP)).not.toBeNull();
    expect(standIn.refusedRefreshes).toBe(0);
    expect((await harness.ctx.shops.getShop(SHOP))?.pausedReason).not.toBe(RECONNECT_NEEDED);
  });
});

describe("shops still on a non-expiring token", () => {
  const LEGACY = "legacy-shop.myshopify.com";

  async function legacyShop(now?: () => number, env: Record<string, string> = {}) {
    const harness = await harnessWith({
      ...(now ? { shopifyNow: now } : {}),
      shopifyNonExpiringRefusedFrom: NON_EXPIRING_REFUSED_FROM,
      env,
    });
    const standIn = harness.standIn.state.installShop(LEGACY);
    await harness.ctx.shops.upsertShop(LEGACY, {
      accessTokenSealed: harness.ctx.secrets.seal(
        standIn.accessToken,
        sealedFor.shopifyAccessToken(LEGACY),
      ),
      installedAt: new Date().toISOString(),
      status: "active",
    });
    const admin = async () =>
      harness.ctx.shopifyAdmin.for((await harness.ctx.shops.getShop(LEGACY)) ?? never());
    return { harness, standIn, admin };
  }

  it("migrates a shop start-up left on its non-expiring token at its next sweep", async () => {
    const { harness, standIn } = await legacyShop(undefined, { RECONCILE_INTERVAL_MS: "200" });
    // The worker role's sweep worker; start-up's migration never ran (or failed) for the shop.
    const sweeps = await startSweepWorker(harness.ctx);
    try {
      await expect
        .poll(async () => (await harness.ctx.shops.getShop(LEGACY))?.refreshTokenSealed ?? null, {
          timeout: 20_000,
        })
        .not.toBeNull();
      expect(standIn.migrations).toBe(1);
      const shop = await harness.ctx.shops.getShop(LEGACY);
      expect(shop?.status).toBe("active");
      // The pair it stored is the one Shopify issued: the shop's next calls work.
      expect(
        standIn.acceptsToken(
          harness.ctx.secrets.open(
            shop?.accessTokenSealed ?? "",
            sealedFor.shopifyAccessToken(LEGACY),
          ),
        ),
      ).toBe(true);
    } finally {
      await sweeps.scheduler.queue.obliterate({ force: true });
      await sweeps.close();
    }
  });

  it("gives the shop an expiring token when the merchant opens the app", async () => {
    const { harness, standIn } = await legacyShop();
    const q = new URLSearchParams({
      embedded: "1",
      shop: LEGACY,
      host: Buffer.from("admin.shopify.com/store/legacy-shop").toString("base64"),
      id_token: await mintSessionToken(LEGACY, KEYS),
    });
    expect((await harness.get(`/settings?${q.toString()}`)).status).toBe(200);
    expect(standIn.tokenExchanges).toBe(1);
    expect((await harness.ctx.shops.getShop(LEGACY))?.refreshTokenSealed).not.toBeNull();
  });

  it("recovers a migration whose every answer was lost on the shop's next use", async () => {
    const { harness, standIn, admin } = await legacyShop();
    // Each exchange happens at Shopify and its answer is lost: start-up's migration gives up.
    standIn.resetRefreshAnswers = 3;
    const run = await runCli(harness.ctx, ["shops", "migrate-tokens"], {
      SHOPIFY_ADMIN_URL: harness.standIn.url,
      SHOPIFY_API_KEY: harness.ctx.config.shopifyApiKey,
      ENCRYPTION_KEY: harness.ctx.config.encryptionKey,
    });
    // One line for the operator: the shop, the cause, and that it is tried again by itself.
    expect(run.code).toBe(1);
    expect(run.stdout.trim()).toBe(
      `failed ${LEGACY}: Shopify's answer did not arrive (fetch failed); each sweep of the shop tries again, or run this command again`,
    );
    expect(run.stdout + run.stderr).not.toMatch(ANY_TOKEN);
    expect(standIn.migrations).toBe(3);
    // The original token no longer works for the Admin API; the next call recovers the pair
    // by retrying the exchange with it (Shopify answers the same pair for 7 days).
    expect((await (await admin()).request(SHOP_QUERY)).data).toMatchObject({
      shop: { currencyCode: "USD" },
    });
    expect(standIn.migrations).toBe(4);
    const shop = await harness.ctx.shops.getShop(LEGACY);
    expect(shop?.refreshTokenSealed).not.toBeNull();
    expect(shop?.pausedReason).toBeNull();
    const token = harness.ctx.secrets.open(
      shop?.accessTokenSealed ?? "",
      sealedFor.shopifyAccessToken(LEGACY),
    );
    expect(token).toBe(standIn.migrated?.access);
  });

  it("pauses a shop Shopify no longer serves after 2027-01-01, once, with the reconnect state", async () => {
    const { harness, standIn, admin } = await legacyShop(
      () => NON_EXPIRING_REFUSED_FROM + 3_600_000,
    );
    await expect((await admin()).request(SHOP_QUERY)).rejects.toThrow(ShopifyTokenError);
    const shop = await harness.ctx.shops.getShop(LEGACY);
    expect(shop?.status).toBe("paused");
    expect(shop?.pausedReason).toBe(RECONNECT_NEEDED);
    const unauthorized = harness.standIn.state.counters.unauthorized;
    // Not a loop: the next call does not reach Shopify.
    await expect((await admin()).request(SHOP_QUERY)).rejects.toThrow(RECONNECT_HINT);
    expect(harness.standIn.state.counters.unauthorized).toBe(unauthorized);
    expect(standIn.migrations).toBe(0);
  });
});

function never(): never {
  throw new Error("the shop is not stored");
}
