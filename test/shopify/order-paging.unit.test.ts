import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  MAX_QUERY_COST,
  type ShopifyStandInHandle,
  startShopifyStandIn,
} from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { firstCursor, nextPage, type PagerCursor } from "../../src/backfill/windowed-pager.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createSecretBox, sealedFor } from "../../src/lib/secret-box.ts";
import { AdminClientFactory, CostThrottle, OrderSource } from "../../src/shopify/index.ts";
import { openDatabase, ShopRepository } from "../../src/store/index.ts";
import type { ShopDomain } from "../../src/sync/source-order.ts";
import { standInOrder } from "../helpers/standin-orders.ts";

const SHOP = "paging-shop.myshopify.com" as ShopDomain;
const TOKEN = "shpat_paging";

let standIn: ShopifyStandInHandle;
const dirs: string[] = [];
afterEach(async () => {
  await standIn?.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function sourceFor(url: string) {
  const config = resolveRuntimeConfig(parseEnv({ SHOPIFY_ADMIN_URL: url, LOG_LEVEL: "silent" }));
  const secrets = createSecretBox(config.encryptionKey);
  const factory = new AdminClientFactory({ config, secrets, logger: createLogger("silent") });
  const dir = mkdtempSync(join(tmpdir(), "order-paging-"));
  dirs.push(dir);
  const shop = await new ShopRepository(openDatabase(join(dir, "c.sqlite"))).upsertShop(SHOP, {
    accessTokenSealed: secrets.seal(TOKEN, sealedFor.shopifyAccessToken(SHOP)),
  });
  return new OrderSource(factory.for(shop), SHOP);
}

describe("order paging", () => {
  it("asks for at most Shopify's 1,000 points per page of full orders", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: "s",
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    for (let i = 1; i <= 5; i++) {
      standIn.state.shop(SHOP)?.putOrder(standInOrder(i, `2026-10-0${i}T00:00:00Z`).payload);
    }
    const source = await sourceFor(standIn.url);
    const page = await source.page({ query: "" });
    expect(page.orders).toHaveLength(4);
    const cost = standIn.state.shop(SHOP)?.bucket;
    // Nothing was refused for its cost, and the bucket was charged only the actual cost.
    expect(standIn.state.counters.throttled).toBe(0);
    expect(cost?.status().currentlyAvailable).toBeGreaterThan(2_000 - MAX_QUERY_COST);
  });

  it("starts a new time window after the window's object budget and still reads every order", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: "s",
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    for (let i = 1; i <= 30; i++) {
      const at = new Date(Date.UTC(2026, 9, 1, 0, i)).toISOString();
      standIn.state.shop(SHOP)?.putOrder(standInOrder(i, at).payload);
    }
    const source = await sourceFor(standIn.url);
    const seen: string[] = [];
    const windows = new Set<string | null>();
    let cursor: PagerCursor | null = firstCursor(null);
    while (cursor) {
      windows.add(cursor.windowSince);
      const page = await nextPage(source, cursor, null, 8);
      seen.push(...page.orders.map((o) => o.id));
      cursor = page.next;
    }
    expect(new Set(seen).size).toBe(30);
    // Windows of 8: each restarts at the last order read (read again, harmlessly).
    expect(windows.size).toBeGreaterThanOrEqual(4);
    expect(seen.length - 30).toBe(windows.size - 1);
  });
});

describe("cost throttle arithmetic", () => {
  it("waits exactly as long as the bucket needs to hold the query's cost", () => {
    let now = 0;
    const throttle = new CostThrottle(() => now);
    expect(throttle.waitMs(SHOP, 500)).toBe(0);
    throttle.observe(SHOP, { maximumAvailable: 1_000, currentlyAvailable: 100, restoreRate: 50 });
    expect(throttle.waitMs(SHOP, 100)).toBe(0);
    expect(throttle.waitMs(SHOP, 600)).toBe(10_000);
    now = 4_000;
    expect(throttle.waitMs(SHOP, 600)).toBe(6_000);
    // Never more than a full bucket, however large the estimate.
    expect(throttle.waitMs(SHOP, 5_000)).toBe(14_000);
  });
});
