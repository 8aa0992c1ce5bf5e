import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { createConnector } from "../../../src/app/connector.ts";
import { createLogger } from "../../../src/lib/logger.ts";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import { ShopifyTokenError } from "../../../src/shopify/admin-client.ts";
import { RECONNECT_NEEDED, ShopTokens } from "../../../src/shopify/install/shop-tokens.ts";
import { cliEntry } from "../../helpers/cli.ts";
import { type InstallHarness, startInstallHarness } from "../../helpers/install-harness.ts";
import { service } from "../../helpers/services.ts";
import { standInOrder } from "../../helpers/standin-orders.ts";

/**
 * Expiring offline tokens against the stand-in Shopify, which issues them like Shopify: they
 * end after `expires_in`, each refresh rotates the refresh token and the one used stays valid
 * until the new one is used.
 */
const SHOP = "expiring-shop.myshopify.com";
const SHOP_QUERY = "query { shop { currencyCode } }";
let h: InstallHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function installed(ttlSeconds: number) {
  h = await startInstallHarness({ shopifyTokenTtlSeconds: ttlSeconds });
  await h.install(SHOP);
  const standIn = h.standIn.state.shop(SHOP);
  if (!standIn) throw new Error("not installed at the stand-in");
  return { h, standIn };
}

const admin = async (harness: InstallHarness) => {
  const shop = await harness.ctx.shops.getShop(SHOP);
  if (!shop) throw new Error("no shop");
  return harness.ctx.shopifyAdmin.for(shop);
};
const storedToken = async (harness: InstallHarness) =>
  harness.ctx.secrets.open(
    (await harness.ctx.shops.getShop(SHOP))?.accessTokenSealed ?? "",
    sealedFor.shopifyAccessToken(SHOP),
  );
/** The connector's count of Shopify token refreshes with this outcome. */
const refreshesCounted = async (harness: InstallHarness, outcome: string) =>
  (await harness.ctx.metrics.tokenRefreshes.get()).values.find(
    (v) => v.labels.kind === "shopify" && v.labels.outcome === outcome,
  )?.value ?? 0;
const makeDue = (harness: InstallHarness) =>
  harness.ctx.shops.updateSettings(SHOP, {
    accessTokenRefreshAt: new Date(Date.now() - 1).toISOString(),
  });

describe("expiring offline tokens", () => {
  it("refreshes before the token ends, and once after a 401, and the calls go on", async () => {
    const installedAt = Date.now();
    const { h, standIn } = await installed(600);
    const first = await storedToken(h);
    // Due at half of its life (10 minutes): long before it ends, whatever the machine's speed.
    const refreshAt = Date.parse((await h.ctx.shops.getShop(SHOP))?.accessTokenRefreshAt ?? "");
    expect(refreshAt).toBeGreaterThanOrEqual(installedAt + 300_000 - 1_000);
    expect(refreshAt).toBeLessThanOrEqual(Date.now() + 300_000);
    expect((await (await admin(h)).request(SHOP_QUERY)).data).toMatchObject({
      shop: { currencyCode: "USD" },
    });
    expect(standIn.refreshes).toBe(0);

    // Past its refresh time: refreshed before the call.
    await makeDue(h);
    await (await admin(h)).request(SHOP_QUERY);
    expect(standIn.refreshes).toBe(1);
    const second = await storedToken(h);
    expect(second).not.toBe(first);
    expect(standIn.acceptsToken(second)).toBe(true);

    // Shopify stops accepting the token early: the 401 triggers one refresh and the retry works.
    standIn.expiringTokens.set(second, Date.now() - 1);
    await (await admin(h)).request(SHOP_QUERY);
    expect(standIn.refreshes).toBe(2);
    expect(await storedToken(h)).not.toBe(second);
    expect(await refreshesCounted(h, "ok")).toBe(2);
  });

  it("lets a backfill go on when the token's time runs out during it", async () => {
    const PROVIDER = { clientId: "exp-client", clientSecret: "exp-secret-1", stores: [1001] };
    h = await startInstallHarness({
      workers: true,
      provider: PROVIDER,
      shopifyTokenTtlSeconds: 1,
      env: { PROVIDER_RATE_LIMIT: "100000" },
    });
    const harness = h;
    const { jar } = await harness.install(SHOP);
    const form = (path: string, body: Record<string, string>) => harness.postForm(path, body, jar);
    await harness.connect(jar, PROVIDER, 1001);
    const standIn = harness.standIn.state.shop(SHOP);
    if (!standIn) throw new Error("not installed");
    for (let i = 1; i <= 40; i++) standIn.putOrder(standInOrder(i, "2026-11-10T10:00:00Z").payload);
    // The token is due for refresh when the backfill reads its first page.
    await new Promise((r) => setTimeout(r, 600));
    expect((await form("/settings/backfill", { since: "2026-11-01" })).status).toBe(303);
    await expect.poll(() => harness.provider.state.orders.size, { timeout: 30_000 }).toBe(40);
    expect(standIn.refreshes).toBeGreaterThanOrEqual(1);
    expect((await harness.ctx.shops.getShop(SHOP))?.pausedReason ?? null).toBeNull();
  });

  it("retries a refresh whose answer was lost with the same refresh token", async () => {
    const { h, standIn } = await installed(3600);
    await makeDue(h);
    standIn.dropRefreshAnswers = 1;
    await expect((await admin(h)).request(SHOP_QUERY)).rejects.toThrow();
    // Shopify rotated, but the previous refresh token (ours) stays valid until the new one is used.
    await (await admin(h)).request(SHOP_QUERY);
    expect(standIn.refreshes).toBe(2);
    expect((await h.ctx.shops.getShop(SHOP))?.pausedReason).not.toBe(RECONNECT_NEEDED);
    expect(standIn.acceptsToken(await storedToken(h))).toBe(true);
    expect(await refreshesCounted(h, "failed")).toBe(1);
    expect(await refreshesCounted(h, "ok")).toBe(1);
  });

  it("refreshes once when two processes find the token due at the same time", async () => {
    const { h, standIn } = await installed(3600);
    await makeDue(h);
    // A second process: its own context on the same database and Redis.
    const other = createConnector({
      config: h.ctx.config,
      logger: createLogger("silent"),
      redis: service("redisUrl"),
      prefix: h.ctx.prefix,
      providerDefaults: {
        baseUrl: h.provider.url,
        authUrl: h.provider.authUrl,
        audience: h.provider.audience,
      },
    });
    await other.ready();
    try {
      const deps = (ctx: typeof h.ctx) =>
        new ShopTokens({
          shopify: ctx.shopifyAdmin.shopify,
          shops: ctx.shops,
          secrets: ctx.secrets,
          redis: ctx.redis,
          prefix: ctx.prefix,
          logger: createLogger("silent"),
        });
      const stale = await storedToken(h);
      const [a, b] = await Promise.all([
        deps(h.ctx).refresh(SHOP, stale),
        deps(other).refresh(SHOP, stale),
      ]);
      expect(standIn.refreshes).toBe(1);
      expect(a).toBe(b);
      expect(a).toBe(await storedToken(h));
    } finally {
      await other.close();
    }
  });

  it("pauses the shop with 'reconnect needed' when Shopify refuses the refresh token", async () => {
    const { h, standIn } = await installed(3600);
    await makeDue(h);
    standIn.refreshTokens.clear();
    await expect((await admin(h)).request(SHOP_QUERY)).rejects.toThrow(ShopifyTokenError);
    const shop = await h.ctx.shops.getShop(SHOP);
    expect(shop?.status).toBe("paused");
    expect(shop?.pausedReason).toBe(RECONNECT_NEEDED);
    expect(standIn.refusedRefreshes).toBe(1);
    // Not a loop: the next call does not ask Shopify again.
    await expect((await admin(h)).request(SHOP_QUERY)).rejects.toThrow(ShopifyTokenError);
    expect(standIn.refusedRefreshes).toBe(1);
    expect(await refreshesCounted(h, "refused")).toBe(1);
  });

  it("migrates a shop's non-expiring token, from the CLI, retrying a lost answer", async () => {
    h = await startInstallHarness();
    const harness = h;
    const LEGACY = "legacy-shop.myshopify.com";
    const standIn = harness.standIn.state.installShop(LEGACY);
    await harness.ctx.shops.upsertShop(LEGACY, {
      accessTokenSealed: harness.ctx.secrets.seal(
        standIn.accessToken,
        sealedFor.shopifyAccessToken(LEGACY),
      ),
      installedAt: new Date().toISOString(),
    });
    standIn.dropRefreshAnswers = 1; // the first exchange's answer is lost
    const run = await promisify(execFile)(
      process.execPath,
      [...cliEntry(), "shops", "migrate-tokens", "--json"],
      {
        cwd: resolve(import.meta.dirname, "../../.."),
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "",
          REDIS_URL: service("redisUrl"),
          REDIS_PREFIX: harness.ctx.prefix,
          DATABASE_PATH: harness.dbPath,
          SHOPIFY_ADMIN_URL: harness.standIn.url,
          SHOPIFY_API_KEY: harness.ctx.config.shopifyApiKey,
          SHOPIFY_API_SECRET: harness.ctx.config.shopifyApiSecret,
          ENCRYPTION_KEY: harness.ctx.config.encryptionKey,
          LOG_LEVEL: "silent",
        },
      },
    );
    expect(JSON.parse(run.stdout)).toEqual([{ shop: LEGACY, result: "migrated" }]);
    expect(standIn.migrations).toBe(2);
    const shop = await harness.ctx.shops.getShop(LEGACY);
    expect(shop?.refreshTokenSealed).not.toBeNull();
    const token = harness.ctx.secrets.open(
      shop?.accessTokenSealed ?? "",
      sealedFor.shopifyAccessToken(LEGACY),
    );
    expect(standIn.expiringTokens.has(token)).toBe(true);
    // Nothing left to migrate.
    expect(await harness.ctx.shopTokens.migrateAll()).toEqual([]);
  });
});
