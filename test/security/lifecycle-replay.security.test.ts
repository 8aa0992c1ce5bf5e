import { afterEach, describe, expect, it } from "vitest";
import { LIFECYCLE_WINDOW_MS } from "../../src/ingest/webhook-ingest.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * Shopify's HMAC covers the body only: topic, webhook ID and trigger time are headers anyone who
 * captured a delivery can change. A body replayed under another topic must be refused, an
 * uninstall must be Shopify's, and an old lifecycle or privacy delivery must not act.
 */
let p: Pipeline;
afterEach(async () => {
  await p?.close();
});

interface Answer {
  outcome?: string;
  error?: { code: string; message: string; fields?: { path: string; message: string }[] };
}
const answer = async (res: Response) => ({ status: res.status, ...((await res.json()) as Answer) });
const privacyRows = () => p.ctx.db.orm.select().from(p.ctx.db.t.privacyRequests);
const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();

/** The shop's own signed deliveries, as an attacker could have captured them. */
const SHOP_RESOURCE = () => ({
  ...p.shopify.state.shop(TEST_SHOP)?.shopResource(),
  currency: "USD",
  iana_timezone: "America/New_York",
});
const DATA_REQUEST = {
  shop_id: 1,
  shop_domain: TEST_SHOP,
  customer: { id: 905001, email: "grace@example.com", phone: null },
  orders_requested: [5001],
  data_request: { id: 42 },
};
const CUSTOMER_REDACT = {
  shop_id: 1,
  shop_domain: TEST_SHOP,
  customer: { id: 905001, email: "grace@example.com", phone: null },
  orders_to_redact: [5001],
};
const SHOP_REDACT = { shop_id: 1, shop_domain: TEST_SHOP };

describe("a Shopify delivery replayed under another topic", () => {
  it("refuses a signed shop/update body re-sent as app/uninstalled: Shopify still accepts the token", async () => {
    p = await startPipeline();
    const res = await answer(
      await p.send("app/uninstalled", SHOP_RESOURCE(), { webhookId: "replayed-1" }),
    );
    expect(res).toMatchObject({ status: 200, outcome: "refused-installed" });
    // Shopify was asked, and answered with the shop (no 401).
    expect(p.shopify.state.counters.graphqlRequests).toBeGreaterThan(0);
    expect(p.shopify.state.counters.unauthorized).toBe(0);
    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    expect(shop?.status).toBe("active");
    expect(shop?.accessTokenSealed).not.toBeNull();

    // The merchant really uninstalls: Shopify now refuses the token (401), and the same kind of
    // delivery is acted on.
    await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });
    const genuine = await answer(await p.send("app/uninstalled", SHOP_RESOURCE()));
    expect(genuine).toMatchObject({ status: 200, outcome: "uninstalled" });
    expect(p.shopify.state.counters.unauthorized).toBeGreaterThan(0);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.status).toBe("uninstalled");
  });

  it.each([
    ["customers/data_request", "customers/redact", CUSTOMER_REDACT, "body.orders_to_redact"],
    ["customers/redact", "customers/data_request", DATA_REQUEST, "body.orders_requested"],
    ["shop/redact", "customers/redact", CUSTOMER_REDACT, "body.customer"],
    ["app/uninstalled", "customers/redact", CUSTOMER_REDACT, "body.shop_domain"],
    ["shop/update", "shop/redact", SHOP_REDACT, "body.shop_domain"],
    ["customers/redact", "shop/redact", SHOP_REDACT, "body.customer"],
  ])(
    "refuses a %s delivery whose body is a %s body (400 naming the field)",
    async (topic, _from, body, field) => {
      p = await startPipeline();
      const model = newModelOrder(5_001, 5_001_000);
      await p.send("orders/create", orderPayload(model));
      await p.drain();

      const res = await answer(await p.send(topic, body));
      expect(res.status).toBe(400);
      expect(res.error?.code).toBe("topic_mismatch");
      expect(res.error?.fields?.[0]?.path).toBe(field);
      // Nothing recorded, redacted, uninstalled or dead-lettered.
      expect(await privacyRows()).toEqual([]);
      expect(await p.ctx.snapshots.get(TEST_SHOP, String(model.id))).not.toBeNull();
      expect(await p.ctx.shops.statusOf(TEST_SHOP)).toBe("active");
      expect(await p.ctx.queues.deadLetter.count()).toBe(0);
    },
  );
});

describe("old lifecycle and privacy deliveries", () => {
  const WINDOW_HOURS = LIFECYCLE_WINDOW_MS / 3_600_000;

  it("refuses privacy requests triggered longer ago than the window, and takes those within it", async () => {
    p = await startPipeline();
    const old = await answer(
      await p.send("customers/data_request", DATA_REQUEST, { triggeredAt: hoursAgo(26) }),
    );
    expect(old).toMatchObject({ status: 200, outcome: "refused-stale" });
    const future = await answer(
      await p.send("customers/redact", CUSTOMER_REDACT, { triggeredAt: hoursAgo(-1) }),
    );
    expect(future).toMatchObject({ status: 200, outcome: "refused-stale" });
    expect(await privacyRows()).toEqual([]);

    // A day late (Shopify has delivered that late): still a genuine request.
    const late = await answer(
      await p.send("customers/data_request", DATA_REQUEST, { triggeredAt: hoursAgo(24) }),
    );
    expect(late).toMatchObject({ status: 200, outcome: "privacy" });
    expect(await privacyRows()).toHaveLength(1);
    expect(WINDOW_HOURS).toBe(25);
  });

  it("refuses a shop/update triggered, or whose shop changed, longer ago than the window", async () => {
    p = await startPipeline();
    const eur = { ...SHOP_RESOURCE(), currency: "EUR", iana_timezone: "Europe/Berlin" };
    const old = await answer(await p.send("shop/update", eur, { triggeredAt: hoursAgo(30) }));
    expect(old).toMatchObject({ status: 200, outcome: "refused-stale" });
    // A fresh trigger time cannot revive a body whose own (signed) updated_at is two days old.
    const revived = await answer(await p.send("shop/update", { ...eur, updated_at: hoursAgo(48) }));
    expect(revived).toMatchObject({ status: 200, outcome: "refused-stale" });
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.shopCurrency).not.toBe("EUR");

    const fresh = await answer(await p.send("shop/update", eur));
    expect(fresh).toMatchObject({ status: 200, outcome: "shop-updated" });
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.shopCurrency).toBe("EUR");
  });
});

describe("webhook metrics", () => {
  it("labels an unknown topic header `other`: a new header string is not a new series", async () => {
    p = await startPipeline();
    const forged = `orders/${"x".repeat(300)}`;
    expect((await p.send(forged, { id: 1 })).status).toBe(200);
    expect((await p.send("orders/whatever", { id: 1 })).status).toBe(200);
    const text = await p.ctx.metrics.registry.metrics();
    expect(text).toContain('connector_webhooks_received_total{topic="other",outcome="ignored"} 2');
    expect(text).not.toContain("xxxxxxxx");
    expect(text).not.toContain("orders/whatever");
  });
});
