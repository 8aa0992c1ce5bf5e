import type { RestOrder } from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { type InstallHarness, startInstallHarness } from "../../helpers/install-harness.ts";
import { standInOrder } from "../../helpers/standin-orders.ts";

const SHOP = "toml-shop.myshopify.com";

let h: InstallHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("webhooks from shopify.app.toml (SHOPIFY_WEBHOOKS=app)", () => {
  it("registers nothing per shop, removes a per-shop duplicate left by an older version, and each event arrives once", async () => {
    h = await startInstallHarness({ appWebhooks: true });
    const callback = `${h.appUrl}/webhooks/shopify`;
    // An older version of the connector registered orders/create for this shop itself.
    const shop = h.standIn.installShop(SHOP);
    shop.subscriptions.push({
      id: "gid://shopify/WebhookSubscription/900001",
      topic: "ORDERS_CREATE",
      uri: callback,
      createdAt: "2026-01-01T00:00:00Z",
      updatedAt: "2026-01-01T00:00:00Z",
    });
    const { callback: done } = await h.install(SHOP);
    expect(done.status).toBe(302);
    expect(shop.subscriptions.filter((s) => s.uri === callback)).toEqual([]);
    expect((await h.ctx.shops.getShop(SHOP))?.subscriptionsError).toBeNull();

    const deliveries = await h.standIn.upsertOrder(
      SHOP,
      standInOrder(7_700_001, "2026-11-20T10:00:00Z").payload as RestOrder,
    );
    expect(deliveries.map((d) => [d.topic, d.uri, d.status])).toEqual([
      ["orders/create", callback, 200],
    ]);
  });

  it("per-shop registration (development) subscribes every topic for the shop", async () => {
    h = await startInstallHarness();
    await h.install(SHOP);
    const topics = h.standIn.state.shop(SHOP)?.subscriptions.map((s) => s.topic) ?? [];
    expect(topics).toContain("ORDERS_CREATE");
    expect(topics).toContain("APP_UNINSTALLED");
  });
});
