import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cachedShopStatus } from "../../src/ingest/shop-status.ts";
import { openDatabase, ShopRepository } from "../../src/store/index.ts";
import { type PostgresHandle, startPostgres } from "../helpers/postgres.ts";

/**
 * The receiver's view of a shop's status while Postgres is away (a restart, a failover): the
 * status it last read stands, as nothing changes it meanwhile (every change is a write to that
 * database), so a shop's webhooks are still queued from Redis (docs/configuration.md, "Running
 * on Postgres"). Before, every webhook past the 5 s cache was answered 503 until Postgres came
 * back.
 */
const ACTIVE = "outage-active.myshopify.com";
const PAUSED = "outage-paused.myshopify.com";
const NEVER_READ = "outage-new.myshopify.com";

let server: PostgresHandle;
let url: string;
beforeAll(async () => {
  server = await startPostgres();
  url = await server.createDatabase("shop_status");
});
afterAll(() => server.stop());

describe("the receiver's shop status while Postgres is down", () => {
  it("keeps the status last read, and refuses a shop it never read (503: Shopify sends it again)", async () => {
    const db = openDatabase(url);
    try {
      await db.ready();
      const shops = new ShopRepository(db);
      await shops.upsertShop(ACTIVE, { storeId: 1001, providerClientId: "c" });
      await shops.upsertShop(NEVER_READ, { storeId: 1002, providerClientId: "c" });
      await shops.upsertShop(PAUSED, { storeId: 1003, providerClientId: "c" });
      await shops.setStatus(PAUSED, "paused", "credentials refused");
      // No cache at all: every call reads the database, as one past the web's 5 s does.
      const status = cachedShopStatus({ shops }, 0);
      expect(await status.shopStatus(ACTIVE)).toBe("active");
      expect(await status.shopStatus(PAUSED)).toBe("paused");

      await server.kill();
      expect(await status.shopStatus(ACTIVE)).toBe("active");
      expect(await status.shopStatus(PAUSED)).toBe("paused");
      await expect(status.shopStatus(NEVER_READ)).rejects.toThrow();
      // A status the connector itself changed is read again, never taken from before.
      status.forget(ACTIVE);
      await expect(status.shopStatus(ACTIVE)).rejects.toThrow();

      await server.restart();
      await expect.poll(() => status.shopStatus(NEVER_READ).catch(() => "down")).toBe("active");
    } finally {
      await db.close();
    }
  }, 60_000);
});
