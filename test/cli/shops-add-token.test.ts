import { afterEach, describe, expect, it } from "vitest";
import { sealedFor } from "../../src/lib/secret-box.ts";
import { startHeartbeat } from "../../src/metrics/index.ts";
import { BulkRetryQueue } from "../../src/ops/bulk-retry.ts";
import { RECONNECT_NEEDED } from "../../src/shopify/install/shop-tokens.ts";
import { runCli } from "../helpers/cli.ts";
import {
  APP_KEY,
  type InstallHarness,
  startInstallHarness,
  tokenRefusedDeadLetter,
} from "../helpers/install-harness.ts";

/**
 * `connector shops add --access-token T` against the stand-in Shopify over real HTTP: T is
 * exchanged for an expiring pair before anything is saved, as the shops' migration does, so a
 * token Shopify will not exchange is refused at the command (before, it was saved and the shop
 * paused later with "reconnect needed").
 */
const SHOP = "cli-token-shop.myshopify.com";
const PROVIDER = { clientId: "token-client", clientSecret: "token-secret-1", stores: [1001] };
/** Every token the stand-in hands out: non-expiring, expiring access and refresh tokens. */
const ANY_TOKEN = /shp(?:at|rt)_[0-9a-z_]+/;

let h: InstallHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start() {
  h = await startInstallHarness({ provider: PROVIDER });
  return h;
}

/**
 * The command as an operator types it, with the connector's settings (LOG_LEVEL as by default)
 * and any of them changed by `env`.
 */
function addShopWith(
  harness: InstallHarness,
  env: Record<string, string>,
  token: string,
  ...extra: string[]
) {
  return runCli(
    harness.ctx,
    [
      "shops",
      "add",
      "--shop",
      SHOP,
      "--provider-client-id",
      PROVIDER.clientId,
      "--provider-client-secret",
      PROVIDER.clientSecret,
      "--store-id",
      "1001",
      "--access-token",
      token,
      ...extra,
    ],
    {
      APP_URL: harness.appUrl,
      SHOPIFY_ADMIN_URL: harness.standIn.url,
      SHOPIFY_API_KEY: APP_KEY,
      ENCRYPTION_KEY: harness.ctx.config.encryptionKey,
      PROVIDER_BASE_URL: harness.provider.url,
      PROVIDER_AUTH_URL: harness.provider.authUrl,
      PROVIDER_AUDIENCE: harness.provider.audience,
      LOG_LEVEL: "info",
      ...env,
    },
  );
}

const addShop = (harness: InstallHarness, token: string, ...extra: string[]) =>
  addShopWith(harness, {}, token, ...extra);

const storedToken = async (harness: InstallHarness) => {
  const sealed = (await harness.ctx.shops.getShop(SHOP))?.accessTokenSealed;
  return sealed ? harness.ctx.secrets.open(sealed, sealedFor.shopifyAccessToken(SHOP)) : null;
};

/** An order dead-lettered because Shopify refused the shop's token, its snapshot stored. */
const waitingDeadLetters = async (harness: InstallHarness) =>
  (await harness.ctx.queues.deadLetter.getJobCounts("waiting")).waiting;

const refusedLine = (harness: InstallHarness, said: string) =>
  `connector: nothing saved: Shopify would not exchange the token for an expiring one (${said}): --access-token must be an offline token of this app (SHOPIFY_API_KEY ${APP_KEY}) for ${SHOP}, not yet exchanged; a custom app's or another app's token, a revoked one, or any non-expiring one from 2027-01-01 cannot be used: install the app on the shop instead (${harness.appUrl}/shopify/install?shop=${SHOP})`;

describe("connector shops add --access-token", () => {
  it("exchanges the token for an expiring pair and stores the pair, never the token given", async () => {
    const harness = await start();
    const standIn = harness.standIn.state.installShop(SHOP);
    const given = standIn.accessToken;

    const added = await addShop(harness, given);
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    expect(added.stdout.trim()).toBe(
      `shop ${SHOP} registered: provider store 1001, status active; its Shopify token was exchanged for an expiring one, stored encrypted (the token given no longer works)`,
    );
    expect(standIn.migrations).toBe(1);
    const shop = await harness.ctx.shops.getShop(SHOP);
    expect(shop?.status).toBe("active");
    // The pair Shopify issued, which expires and is refreshed: T itself is no longer stored.
    const token = await storedToken(harness);
    expect(token).not.toBe(given);
    expect(token).toBe(standIn.migrated?.access);
    expect(standIn.acceptsToken(token ?? "")).toBe(true);
    expect(standIn.acceptsToken(given)).toBe(false);
    expect(Date.parse(shop?.accessTokenExpiresAt ?? "")).toBeGreaterThan(Date.now());
    expect(shop?.accessTokenRefreshAt).not.toBeNull();
    expect(shop?.refreshTokenSealed).not.toBeNull();
    expect(
      harness.ctx.secrets.open(shop?.refreshTokenSealed ?? "", sealedFor.shopifyRefreshToken(SHOP)),
    ).toBe(standIn.migrated?.refresh);
    // Nothing left for the start-up's or the sweep's migration.
    expect(await harness.ctx.shopTokens.migrateAll()).toEqual([]);
  });

  it("saves nothing for a token Shopify will not exchange, and names the cause and the fix", async () => {
    const harness = await start();
    harness.standIn.state.installShop(SHOP);
    // A token of the shop that is not this app's (a custom app made in the shop's admin).
    const other = "shpat_0123456789abcdef0123456789abcdef";

    const refused = await addShop(harness, other);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe("");
    expect(refused.stderr.trim()).toBe(
      refusedLine(harness, "Shopify answered 400 invalid_subject_token"),
    );
    expect(refused.stdout + refused.stderr).not.toMatch(ANY_TOKEN);
    expect(await harness.ctx.shops.getShop(SHOP)).toBeNull();
  });

  it("keeps a registered shop as it was when the new token is refused", async () => {
    const harness = await start();
    const standIn = harness.standIn.state.installShop(SHOP);
    expect((await addShop(harness, standIn.accessToken)).code).toBe(0);
    const before = await harness.ctx.shops.getShop(SHOP);

    // A token Shopify revoked (the app was uninstalled and installed again since).
    const revoked = standIn.accessToken;
    standIn.uninstalled = true;
    standIn.reinstall();
    const refused = await addShop(harness, revoked);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe(
      refusedLine(harness, "Shopify answered 400 invalid_subject_token"),
    );
    expect(refused.stdout + refused.stderr).not.toMatch(ANY_TOKEN);
    expect(await harness.ctx.shops.getShop(SHOP)).toEqual(before);
  });

  it("ends a shop's wait for a new token ('reconnect needed') and queues what waited for a worker", async () => {
    const harness = await start();
    const standIn = harness.standIn.state.installShop(SHOP);
    expect((await addShop(harness, standIn.accessToken)).code).toBe(0);
    // Shopify stopped taking the shop's token: the shop waits for a new one, and the orders
    // that needed it wait as dead letters that say so.
    await harness.ctx.shops.setStatus(SHOP, "paused", RECONNECT_NEEDED);
    const orderIds = ["9100001", "9100002", "9100003"];
    for (const orderId of orderIds)
      await tokenRefusedDeadLetter(harness, SHOP, orderId, { topic: "orders/create" });
    expect(await harness.ctx.shopTokens.current(SHOP)).toBeNull();
    standIn.uninstalled = true;
    standIn.reinstall();

    const added = await addShop(harness, standIn.accessToken);
    expect(added.stderr).toBe("");
    const shop = await harness.ctx.shops.getShop(SHOP);
    expect([shop?.status, shop?.pausedReason]).toEqual(["active", null]);
    // Before, the reason stayed: the shop was "active" and every call still found no token.
    const token = await harness.ctx.shopTokens.current(SHOP);
    expect(token).toBe(standIn.migrated?.access);
    expect(standIn.acceptsToken(token ?? "")).toBe(true);
    // What waited is queued as the job the merchant's reconnect queues; no worker runs yet.
    const lines = added.stdout.trim().split("\n");
    const jobId = /as job (dlq-retry-reconnect-[0-9a-f-]+) /.exec(lines[1] ?? "")?.[1] ?? "";
    expect(lines).toEqual([
      `shop ${SHOP} registered: provider store 1001, status active; its Shopify token was exchanged for an expiring one, stored encrypted (the token given no longer works)`,
      `the shop was waiting for a new Shopify token: what waited (its paused backfill, the orders dead-lettered while Shopify refused the token, the claims' order tags) is queued as job ${jobId} on the maintenance queue; a worker runs it, and none is running now: it waits until one starts (\`npm start\`, or the worker role)`,
    ]);
    expect(await waitingDeadLetters(harness)).toBe(orderIds.length);

    // A worker starts: the orders that waited are queued again, each once.
    await harness.maintenanceWorker();
    await expect.poll(() => waitingDeadLetters(harness), { timeout: 30_000 }).toBe(0);
    const queue = new BulkRetryQueue(harness.ctx.redis, harness.ctx.prefix);
    try {
      await expect
        .poll(async () => (await queue.view(jobId))?.status, { timeout: 30_000 })
        .toBe("completed");
      expect(await queue.view(jobId)).toMatchObject({ matched: 3, retried: 3, skipped: 0 });
    } finally {
      await queue.close();
    }
    const synced = await harness.ctx.queues.sync.getJobs(["prioritized", "waiting", "delayed"]);
    expect(synced.map((j) => [j.data.orderId, j.data.trigger]).sort()).toEqual(
      orderIds.map((id) => [id, "dlq-retry"]),
    );

    // Paused again, with a worker running (its heartbeat): the line says no more than that.
    await harness.ctx.shops.setStatus(SHOP, "paused", RECONNECT_NEEDED);
    standIn.uninstalled = true;
    standIn.reinstall();
    const beat = startHeartbeat(harness.ctx.redis, harness.ctx.prefix, "worker");
    try {
      const again = await addShop(harness, standIn.accessToken);
      expect(again.stderr).toBe("");
      const line = again.stdout.trim().split("\n")[1] ?? "";
      expect(line).toMatch(
        / as job dlq-retry-reconnect-[0-9a-f-]+ on the maintenance queue; a worker runs it$/,
      );
      expect(line).not.toContain(jobId);
    } finally {
      beat.stop();
    }
  });

  it("says so in one line when the app's credentials are not Shopify's", async () => {
    const harness = await start();
    const standIn = harness.standIn.state.installShop(SHOP);
    const refused = await addShopWith(
      harness,
      { SHOPIFY_API_SECRET: "not-the-app-secret" },
      standIn.accessToken,
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toBe(
      `connector: nothing saved: Shopify did not accept the app's credentials to exchange the token (Shopify answered 400 invalid_client): check SHOPIFY_API_KEY (${APP_KEY}) and SHOPIFY_API_SECRET, the app's client ID and secret`,
    );
    expect(refused.stdout + refused.stderr).not.toMatch(ANY_TOKEN);
    expect(refused.stderr).not.toContain("not-the-app-secret");
    expect(await harness.ctx.shops.getShop(SHOP)).toBeNull();
    // The token was not exchanged: it still works as it is.
    expect(standIn.acceptsToken(standIn.accessToken)).toBe(true);
  });

  it("saves nothing when Shopify's answers are lost, and a second run gets the same pair", async () => {
    const harness = await start();
    const standIn = harness.standIn.state.installShop(SHOP);
    const given = standIn.accessToken;
    // Shopify makes the exchange each time and every answer is lost on its way.
    standIn.resetRefreshAnswers = 3;

    const lost = await addShop(harness, given);
    expect(lost.code).toBe(1);
    expect(lost.stdout).toBe("");
    expect(lost.stderr.trim()).toMatch(
      /^connector: nothing saved: the Shopify token could not be exchanged for an expiring one \(fetch failed: [^)]+\): run the command again \(Shopify answers the same pair to the same token for 7 days\), or add --no-verify to store it as given and have the connector exchange it at its next start or sweep$/,
    );
    expect(lost.stdout + lost.stderr).not.toMatch(ANY_TOKEN);
    expect(await harness.ctx.shops.getShop(SHOP)).toBeNull();
    expect(standIn.migrations).toBe(3);

    // As the line says: run again, and the pair Shopify made the first time is stored.
    const again = await addShop(harness, given);
    expect(again.code).toBe(0);
    expect(await storedToken(harness)).toBe(standIn.migrated?.access);
    expect(standIn.acceptsToken((await storedToken(harness)) ?? "")).toBe(true);
  });

  it("with --no-verify stores the token as given, and the migration exchanges it later", async () => {
    const harness = await start();
    const standIn = harness.standIn.state.installShop(SHOP);
    const given = standIn.accessToken;

    const added = await addShop(harness, given, "--no-verify");
    expect(added.stderr).toBe("");
    expect(added.stdout.trim()).toBe(
      `shop ${SHOP} registered: provider store 1001, status active; its Shopify token is stored as given, not checked: the connector exchanges it for an expiring one at its next start or sweep (\`connector shops migrate-tokens\` does it now)`,
    );
    expect(standIn.migrations).toBe(0);
    expect(await storedToken(harness)).toBe(given);
    expect((await harness.ctx.shops.getShop(SHOP))?.refreshTokenSealed).toBeNull();

    expect(await harness.ctx.shopTokens.migrateAll()).toEqual([{ shop: SHOP, result: "migrated" }]);
    expect(await storedToken(harness)).toBe(standIn.migrated?.access);
  });
});
