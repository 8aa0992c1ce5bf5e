import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SweepScheduler, sweepSchedulerId } from "../../../src/backfill/index.ts";
import { startSweepWorker } from "../../../src/jobs/sweep-worker.ts";
import { ShopInstaller, SUBSCRIBED_TOPICS, topicEnum } from "../../../src/shopify/index.ts";
import { type InstallHarness, startInstallHarness } from "../../helpers/install-harness.ts";

const SHOP = "subs-shop.myshopify.com";

let h: InstallHarness;
beforeEach(async () => {
  h = await startInstallHarness();
  await h.install(SHOP);
});
afterEach(async () => {
  await h.close();
});

function installerWith(resyncs: { shop: string; since: Date }[], now: Date) {
  return new ShopInstaller({
    adminFor: (shop) => h.ctx.shopifyAdmin.for(shop),
    shops: h.ctx.shops,
    sessions: h.ctx.sessions,
    secrets: h.ctx.secrets,
    callbackUrl: `${h.appUrl}/webhooks/shopify`,
    logger: h.ctx.logger,
    resyncSince: async (shop, since) => {
      resyncs.push({ shop, since });
    },
    now: () => now,
  });
}

describe("webhook subscription check (start-up and sweep)", () => {
  it("changes nothing and resyncs nothing when every subscription is in place", async () => {
    const resyncs: { shop: string; since: Date }[] = [];
    const report = await installerWith(resyncs, new Date()).checkSubscriptions(SHOP);
    expect(report?.created).toEqual([]);
    expect(report?.present.sort()).toEqual([...SUBSCRIBED_TOPICS].sort());
    expect(resyncs).toEqual([]);
  });

  it("re-creates a subscription Shopify deleted and resyncs since the last good check", async () => {
    const standIn = h.standIn.state.shop(SHOP);
    const before = (await h.ctx.shops.getShop(SHOP))?.subscriptionsCheckedAt ?? "";
    expect(before).not.toBe("");
    // Shopify removed the orders/updated subscription after failed deliveries.
    const index = standIn?.subscriptions.findIndex((s) => s.topic === "ORDERS_UPDATED") ?? -1;
    standIn?.subscriptions.splice(index, 1);

    const resyncs: { shop: string; since: Date }[] = [];
    const now = new Date(Date.now() + 3_600_000);
    const report = await installerWith(resyncs, now).checkSubscriptions(SHOP);
    expect(report?.created).toEqual(["orders/updated"]);
    expect(report?.resyncedSince).toBe(before);
    expect(resyncs).toEqual([{ shop: SHOP, since: new Date(before) }]);
    expect(
      standIn?.subscriptions
        .filter((s) => s.topic === topicEnum("orders/updated"))
        .map((s) => s.uri),
    ).toEqual([`${h.appUrl}/webhooks/shopify`]);
    expect((await h.ctx.shops.getShop(SHOP))?.subscriptionsCheckedAt).toBe(now.toISOString());
  });

  it("skips uninstalled shops in the start-up check", async () => {
    await h.ctx.shops.setStatus(SHOP, "uninstalled");
    h.standIn.state.shop(SHOP)?.subscriptions.splice(0);
    const reports = await installerWith([], new Date()).checkAllSubscriptions();
    expect(reports).toEqual([]);
    expect(h.standIn.state.shop(SHOP)?.subscriptions).toEqual([]);
  });

  it("schedules the shop's reconciliation sweep at install", async () => {
    const sweeps = new SweepScheduler(h.ctx.redis, h.ctx.prefix, 60_000);
    try {
      expect(await sweeps.queue.getJobScheduler(sweepSchedulerId(SHOP))).toBeDefined();
    } finally {
      await sweeps.close();
    }
  });

  it("the reconciliation sweep re-creates a deleted subscription", async () => {
    await h.ctx.shops.setStatus(SHOP, "active");
    const standIn = h.standIn.state.shop(SHOP);
    const index = standIn?.subscriptions.findIndex((s) => s.topic === "APP_UNINSTALLED") ?? -1;
    standIn?.subscriptions.splice(index, 1);
    const sweep = await startSweepWorker(h.ctx);
    try {
      await sweep.scheduler.queue.add("sweep", { shop: SHOP });
      await expect
        .poll(() => standIn?.subscriptions.some((s) => s.topic === "APP_UNINSTALLED"), {
          timeout: 10_000,
        })
        .toBe(true);
    } finally {
      await sweep.close();
    }
  });
});

describe("a failing subscription check is shown, not only logged", () => {
  it("records the error for the settings page, status and /metrics, and clears it when a check succeeds", async () => {
    const standIn = h.standIn.state.shop(SHOP);
    if (!standIn) throw new Error("not installed");
    // Shopify stops accepting the app's tokens for this shop.
    for (const token of standIn.expiringTokens.keys()) standIn.expiringTokens.set(token, 0);
    standIn.refreshTokens.clear();
    const failure = await installerWith([], new Date())
      .checkSubscriptions(SHOP)
      .then(
        () => null,
        (e: unknown) => e as Error,
      );
    expect(failure).toBeInstanceOf(Error);
    // The check's own error, as recorded (not merely some text).
    const error = (await h.ctx.shops.getShop(SHOP))?.subscriptionsError;
    expect(error).toBe(failure?.message.slice(0, 300));
    expect(error?.length).toBeGreaterThan(0);

    const metrics = await (await fetch(new URL("/metrics", h.appUrl))).text();
    expect(metrics).toMatch(/^connector_webhook_subscription_failing_shops 1$/m);
    const { jar } = await h.install(SHOP); // a reinstall brings a working token
    expect((await h.ctx.shops.getShop(SHOP))?.subscriptionsError).toBeNull();
    const page = await (await h.get("/settings", jar)).text();
    expect(page).not.toContain("Shopify is not yet sending this app your orders");
    await h.ctx.shops.updateSettings(SHOP, { subscriptionsError: "Shopify answered 500" });
    const failing = await (await h.get("/settings", jar)).text();
    // The merchant reads what it means; the error itself is for operators (`status`).
    expect(failing).toContain(
      "Shopify is not yet sending this app your orders as they happen: setting that up failed.",
    );
    expect(failing).not.toContain("Shopify answered 500");
  });
});
