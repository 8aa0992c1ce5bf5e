import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ShopifyStandInHandle, startShopifyStandIn } from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createSecretBox, sealedFor } from "../../src/lib/secret-box.ts";
import {
  AdminClientFactory,
  normalizeRestOrder,
  OrderSource,
  ShopNotConnectedError,
} from "../../src/shopify/index.ts";
import { openDatabase, ShopRepository } from "../../src/store/index.ts";
import { soldWithoutShipping } from "../../src/sync/index.ts";
import type { ShopDomain, SourceOrder } from "../../src/sync/source-order.ts";
import { orderRef } from "../helpers/orders.ts";
import { type ModelOrder, orderPayload } from "../helpers/shopify-order-builder.ts";

const SHOP = "graphql-shop.myshopify.com" as ShopDomain;
const TOKEN = "shpat_graphql_test";
const SECRET = "graphql-test-secret";

const model = (id: number, overrides: Partial<ModelOrder> = {}): ModelOrder => ({
  id,
  number: 1000 + id,
  email: "grace@example.com",
  createdAt: "2026-11-01T10:00:00-05:00",
  updatedAt: "2026-11-02T10:00:00-05:00",
  cancelledAt: null,
  note: "leave at the door",
  shippingCents: 500,
  taxBps: 800,
  lines: [
    {
      id: id * 100 + 1,
      variantId: 501,
      sku: "TS-1",
      title: "T-shirt",
      price: 1000,
      quantity: 2,
      currentQuantity: 2,
    },
    {
      id: id * 100 + 2,
      variantId: 502,
      sku: null,
      title: "Mug",
      price: 1250,
      quantity: 3,
      currentQuantity: 1,
    },
  ],
  fulfillments: [],
  locationId: 4001,
  ...overrides,
});

let standIn: ShopifyStandInHandle;
const dirs: string[] = [];
afterEach(async () => {
  await standIn?.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function adminFor(url: string) {
  const env = parseEnv({ SHOPIFY_ADMIN_URL: url, SHOPIFY_API_SECRET: SECRET, LOG_LEVEL: "silent" });
  const config = resolveRuntimeConfig(env);
  const secrets = createSecretBox(config.encryptionKey);
  const factory = new AdminClientFactory({ config, secrets, logger: createLogger("silent") });
  const dir = mkdtempSync(join(tmpdir(), "admin-graphql-"));
  dirs.push(dir);
  const shops = new ShopRepository(openDatabase(join(dir, "connector.sqlite")));
  const shop = await shops.upsertShop(SHOP, {
    accessTokenSealed: secrets.seal(TOKEN, sealedFor.shopifyAccessToken(SHOP)),
  });
  return { factory, shop, source: new OrderSource(factory.for(shop), SHOP) };
}

/** Line weights exist only in the REST payload (Admin GraphQL's LineItem has none). */
const withoutLineGrams = (order: SourceOrder): SourceOrder => ({
  ...order,
  lineItems: order.lineItems.map((l) => ({ ...l, grams: null })),
});

describe("Admin GraphQL order → SourceOrder", () => {
  it("gives the same SourceOrder as the webhook payload of the same order", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const m = model(7);
    m.cancelledAt = "2026-11-03T09:00:00-05:00";
    m.fulfillments.push({
      id: 9001,
      status: "success",
      trackingNumber: "1Z999",
      shipmentStatus: "in_transit",
      lineIds: [701],
      createdAt: "2026-11-02T11:00:00-05:00",
      updatedAt: "2026-11-02T12:00:00-05:00",
    });
    const payload = orderPayload(m);
    payload.line_items[0]?.discount_allocations.push({
      amount: "1.50",
      amount_set: {
        shop_money: { amount: "1.50", currency_code: "USD" },
        presentment_money: { amount: "1.50", currency_code: "USD" },
      },
    } as never);
    await standIn.upsertOrder(SHOP, payload, { deliver: false });

    const { source } = await adminFor(standIn.url);
    const fromGraphql = await source.fetchOrder("7");
    const fromWebhook = normalizeRestOrder(SHOP, JSON.parse(JSON.stringify(payload)));

    expect(fromGraphql).toEqual(withoutLineGrams(fromWebhook));
    expect(fromGraphql?.cancelReason).toBe("customer");
    expect(fromGraphql?.fulfillments[0]?.shipmentStatus).toBe("in_transit");
    expect(fromGraphql?.lineItems[0]?.discountCents).toBe(150);
  });

  it("reads a point-of-sale sale (no address, no shipping line) as its webhook payload does", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const payload = {
      ...orderPayload(model(8, { email: null, shippingCents: 0 })),
      source_name: "pos",
      shipping_lines: [],
      shipping_address: null,
      billing_address: null,
    };
    await standIn.upsertOrder(SHOP, payload, { deliver: false });

    const { source } = await adminFor(standIn.url);
    const fromGraphql = await source.fetchOrder("8");
    const fromWebhook = normalizeRestOrder(SHOP, JSON.parse(JSON.stringify(payload)));
    expect(fromGraphql).toEqual(withoutLineGrams(fromWebhook));
    expect(fromGraphql && soldWithoutShipping(fromGraphql)).toBe(true);
  });

  it("reads a counter sale whose customer has a country only as its webhook payload does", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const body = orderPayload(model(9, { shippingCents: 0 }));
    const payload = {
      ...body,
      source_name: "pos",
      shipping_lines: [],
      shipping_address: null,
      billing_address: { name: "Grace Hopper", country: "United States", country_code: "US" },
    };
    await standIn.upsertOrder(SHOP, payload, { deliver: false });

    const { source } = await adminFor(standIn.url);
    const fromGraphql = await source.fetchOrder("9");
    const fromWebhook = normalizeRestOrder(SHOP, JSON.parse(JSON.stringify(payload)));
    expect(fromGraphql).toEqual(withoutLineGrams(fromWebhook));
    // Backfill, resync and the sweep keep it out as the webhook does.
    expect(fromGraphql && soldWithoutShipping(fromGraphql)).toBe(true);
  });

  it("finds an order by its name and reads every line of a 23-line order", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const lines = Array.from({ length: 23 }, (_, i) => ({
      id: 5000 + i,
      variantId: 600 + i,
      sku: `SKU-${i}`,
      title: `Item ${i}`,
      price: 100 + i,
      quantity: 1,
      currentQuantity: 1,
    }));
    await standIn.upsertOrder(SHOP, orderPayload(model(3)), { deliver: false });
    await standIn.upsertOrder(SHOP, orderPayload(model(4, { lines })), { deliver: false });

    const { source } = await adminFor(standIn.url);
    const byName = await source.findOrder(orderRef("#1004"));
    expect(byName?.id).toBe("4");
    expect(byName?.lineItems.map((l) => l.sku)).toEqual(lines.map((l) => l.sku));
    expect((await source.findOrder(orderRef("1003")))?.id).toBe("3");
    expect(await source.findOrder(orderRef("#9999"))).toBeNull();
  });

  it("refuses a shop that has no access token", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const { factory, shop } = await adminFor(standIn.url);
    expect(() => factory.for({ ...shop, accessTokenSealed: null })).toThrow(ShopNotConnectedError);
  });
});

describe("Admin GraphQL cost throttle", () => {
  for (const throttledStatus of [200, 429] as const) {
    it(`waits for the bucket instead of being throttled again (THROTTLED at ${throttledStatus})`, async () => {
      // A bucket of 1,000 points refilling 2,000/s: each page asks for 938 points.
      standIn = await startShopifyStandIn({
        apiSecret: SECRET,
        throttledStatus,
        shops: [{ shop: SHOP, accessToken: TOKEN, maximumAvailable: 1_000, restoreRate: 2_000 }],
      });
      for (let i = 1; i <= 12; i++) {
        await standIn.upsertOrder(SHOP, orderPayload(model(i)), { deliver: false });
      }
      const { source } = await adminFor(standIn.url);
      // Another app of the shop spent the bucket: the first query meets THROTTLED.
      standIn.state.shop(SHOP)?.bucket.drain(1_000);
      const seen: string[] = [];
      let after: string | null = null;
      do {
        const page = await source.page({ query: "", after });
        seen.push(...page.orders.map((o) => o.id));
        after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
      } while (after);

      expect(seen).toHaveLength(12);
      expect(standIn.state.counters.throttled).toBe(1);
    });
  }
});
