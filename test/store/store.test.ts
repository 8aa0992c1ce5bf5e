import { spawn } from "node:child_process";
import { createCipheriv } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSecretBox } from "../../src/lib/secret-box.ts";
import {
  createLinkRepository,
  type Db,
  openDatabase,
  ShopRepository,
} from "../../src/store/index.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

let dir: string;
let db: Db;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "connector-store-"));
  db = openDatabase(join(dir, "nested", "connector.sqlite"));
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

const key = Buffer.alloc(32, 3).toString("base64");

/** better-sqlite3 itself, for the SQLite-only checks. */
function sqliteClient(store: Db) {
  if (store.dialect !== "sqlite") throw new Error("a SQLite store was expected");
  return store.sqlite.$client;
}

describe("openDatabase", () => {
  it("creates the folder, runs in WAL mode and applies migrations idempotently", async () => {
    expect(sqliteClient(db).pragma("journal_mode", { simple: true })).toBe("wal");
    const again = openDatabase(join(dir, "nested", "connector.sqlite"));
    // Each committed migration applied exactly once, however often the database is opened.
    const journal = JSON.parse(readFileSync("drizzle/meta/_journal.json", "utf8")) as {
      entries: unknown[];
    };
    expect(
      sqliteClient(again).prepare("select count(*) as n from __drizzle_migrations").get(),
    ).toEqual({
      n: journal.entries.length,
    });
    await again.close();
  });

  it("waits for another process's write lock instead of failing with SQLITE_BUSY", async () => {
    const file = join(dir, "nested", "connector.sqlite");
    // Another process takes the write lock, holds it for 400 ms, then commits.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = require("better-sqlite3")(${JSON.stringify(file)});
       db.exec("BEGIN IMMEDIATE"); process.stdout.write("locked\\n");
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400);
       db.exec("COMMIT"); db.close();`,
      ],
      { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve) => holder.stdout.once("data", () => resolve()));
    const started = Date.now();
    await new ShopRepository(db).upsertShop("b.myshopify.com", {});
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(await new ShopRepository(db).getShop("b.myshopify.com")).not.toBeNull();
    await new Promise((resolve) => holder.once("exit", resolve));
  });
});

describe("secret box", () => {
  const A = "shops.access_token:a.myshopify.com";
  it("round-trips, detects tampering and refuses another key", () => {
    const box = createSecretBox(key);
    const sealed = box.seal("shpat_secret", A);
    expect(sealed).toMatch(new RegExp(`^v2:${box.keyId}:`));
    expect(box.open(sealed, A)).toBe("shpat_secret");
    const [, id, body] = sealed.split(":");
    const flipped = Buffer.from(body ?? "", "base64").map((b, i) => (i === 30 ? b ^ 1 : b));
    expect(() => box.open(`v2:${id}:${Buffer.from(flipped).toString("base64")}`, A)).toThrow(
      /tampered/,
    );
    expect(() => createSecretBox(Buffer.alloc(32, 4).toString("base64")).open(sealed, A)).toThrow(
      /neither ENCRYPTION_KEY/,
    );
  });

  it("binds a value to its shop and column: moved elsewhere, it does not open", () => {
    const box = createSecretBox(key);
    const sealed = box.seal("shpat_secret", A);
    expect(() => box.open(sealed, "shops.access_token:b.myshopify.com")).toThrow(
      /another shop or column/,
    );
    expect(() => box.open(sealed, "shops.provider_client_secret:a.myshopify.com")).toThrow(
      /another shop or column/,
    );
  });

  it("opens what a previous key sealed, and says it needs re-sealing", () => {
    const old = createSecretBox(key);
    const sealed = old.seal("shpat_secret", A);
    const next = Buffer.alloc(32, 8).toString("base64");
    const rotated = createSecretBox(next, [key]);
    expect(rotated.keyId).not.toBe(old.keyId);
    expect(rotated.open(sealed, A)).toBe("shpat_secret");
    expect(rotated.isCurrent(sealed)).toBe(false);
    expect(rotated.isCurrent(rotated.seal("x", A))).toBe(true);
  });

  it("still opens values of the first format (no key id, no associated data)", () => {
    // A v1 value as the previous version wrote it: iv | tag | ciphertext, no AAD.
    const iv = Buffer.alloc(12, 1);
    const cipher = createCipheriv("aes-256-gcm", Buffer.from(key, "base64"), iv);
    const data = Buffer.concat([cipher.update("legacy-token", "utf8"), cipher.final()]);
    const v1 = `v1:${Buffer.concat([iv, cipher.getAuthTag(), data]).toString("base64")}`;
    const box = createSecretBox(key);
    expect(box.open(v1, A)).toBe("legacy-token");
    expect(box.isCurrent(v1)).toBe(false);
  });

  it("leaves no plaintext secret in the database file", async () => {
    const box = createSecretBox(key);
    await new ShopRepository(db).upsertShop("a.myshopify.com", {
      providerClientSecretSealed: box.seal("provider-secret-PLAINTEXT-1", "p"),
      accessTokenSealed: box.seal("shpat_PLAINTEXT-2", "a"),
    });
    sqliteClient(db).pragma("wal_checkpoint(TRUNCATE)");
    const bytes = readFileSync(join(dir, "nested", "connector.sqlite")).toString("latin1");
    expect(bytes).not.toContain("PLAINTEXT");
    expect(bytes).toContain("a.myshopify.com");
  });
});

describe.each(["sqlite", "postgres"] as const)("the link store on %s", (engine) => {
  beforeEach(async () => {
    if (engine === "sqlite") return;
    // The same tests on a fresh database of the run's Postgres.
    await db.close();
    db = openDatabase(await createTestDatabase(service("postgresUrl")));
    await db.ready();
  });

  it("records every effect with its intent and loads the links back", async () => {
    const links = createLinkRepository(db);
    const shop = "a.myshopify.com";
    expect(await links.loadLinks(shop, "5001")).toBeNull();
    expect((await links.beginIntent(shop, "5001", "createOrder", "createOrder")).attempts).toBe(1);
    // A second begin before completion means the first attempt may have reached the provider.
    expect(await links.beginIntent(shop, "5001", "createOrder", "createOrder")).toMatchObject({
      status: "pending",
      attempts: 2,
    });
    await links.recordOrderCreated({
      shop,
      sourceOrderId: "5001",
      key: "createOrder",
      storeId: 1001,
      providerBaseUrl: "http://provider.test/v1",
      orderId: 10,
      orderHash: "h1",
      orderName: "#1001",
      lineItems: [{ sourceLineItemId: "a", lineItemId: 100, hash: "la" }],
    });
    await links.beginIntent(shop, "5001", "addLineItem:b", "addLineItem");
    await links.recordLineItemAdded({
      shop,
      sourceOrderId: "5001",
      key: "addLineItem:b",
      sourceLineItemId: "b",
      lineItemId: 101,
      hash: "lb",
    });
    await links.recordLineItemCanceled({
      shop,
      sourceOrderId: "5001",
      key: "cancelLineItem:100",
      lineItemId: 100,
      canceledAt: "2026-11-01T00:00:00Z",
    });
    await links.recordFulfillmentUpserted({
      shop,
      sourceOrderId: "5001",
      key: "f",
      sourceFulfillmentId: "f1",
      fulfillmentId: 300,
      hash: "fh",
    });
    await links.recordOrderUpdated({
      shop,
      sourceOrderId: "5001",
      key: "u",
      orderHash: "h2",
      replaces: "h1",
    });
    await links.markSynced(shop, "5001", "2026-11-01T10:00:00Z");
    expect(await links.loadLinks(shop, "5001")).toEqual({
      storeId: 1001,
      sourceOrderId: "5001",
      orderId: 10,
      orderHash: "h2",
      syncedVersion: "2026-11-01T10:00:00Z",
      canceledAt: null,
      lineItems: [
        { sourceLineItemId: "a", lineItemId: 100, hash: "la", canceledAt: "2026-11-01T00:00:00Z" },
        { sourceLineItemId: "b", lineItemId: 101, hash: "lb", canceledAt: null },
      ],
      fulfillments: [{ sourceFulfillmentId: "f1", fulfillmentId: 300, hash: "fh" }],
    });
    // A finished intent with the same key is an earlier incarnation: it starts afresh.
    expect(await links.beginIntent(shop, "5001", "createOrder", "createOrder")).toMatchObject({
      status: "pending",
      attempts: 1,
    });
    expect(await links.findByOrderName(shop, "1001")).toEqual({
      sourceOrderId: "5001",
      orderId: 10,
    });
    expect(await links.countByResult(shop)).toEqual({ synced: 1, failed: 0, deadLettered: 0 });
  });

  it("marks the order synced in its last write's transaction only when nothing is left to send", async () => {
    const links = createLinkRepository(db);
    const shop = "a.myshopify.com";
    const created = {
      shop,
      sourceOrderId: "5002",
      key: "createOrder",
      storeId: 1001,
      providerBaseUrl: "http://provider.test/v1",
      orderId: 11,
      orderHash: "h1",
      orderName: "#1002",
      lineItems: [{ sourceLineItemId: "a", lineItemId: 110, hash: "la" }],
    };
    await links.beginIntent(shop, "5002", "createOrder", "createOrder");
    const seen: (number | null)[] = [];
    // Something is still to send (say a fulfillment): the order is not marked.
    const notYet = await links.recordOrderCreated(created, {
      version: "2026-11-01T10:00:00Z",
      done: (after) => {
        seen.push(after?.orderId ?? null);
        return false;
      },
    });
    expect(notYet).toBe(false);
    expect((await links.loadLinks(shop, "5002"))?.syncedVersion).toBeNull();
    // The check sees the links as this write leaves them.
    expect(seen).toEqual([11]);

    await links.markFailed(shop, "5002", "failed", {
      message: "provider answered 503",
      category: "exhausted",
      fields: [],
    });
    await links.beginIntent(shop, "5002", "upsertFulfillment:f1", "upsertFulfillment");
    const last = await links.recordFulfillmentUpserted(
      {
        shop,
        sourceOrderId: "5002",
        key: "upsertFulfillment:f1",
        sourceFulfillmentId: "f1",
        fulfillmentId: 310,
        hash: "fh",
      },
      {
        version: "2026-11-01T10:05:00Z",
        done: (after) => after?.fulfillments.some((f) => f.fulfillmentId === 310) ?? false,
      },
    );
    expect(last).toBe(true);
    expect((await links.loadLinks(shop, "5002"))?.syncedVersion).toBe("2026-11-01T10:05:00Z");
    // Like markSynced: a success clears the failure record.
    expect(await links.lastFailure(shop, "5002")).toBeNull();
    expect(await links.countByResult(shop)).toEqual({ synced: 1, failed: 0, deadLettered: 0 });

    // A check that throws leaves the order unmarked but never loses the call's effect.
    await links.beginIntent(shop, "5002", "updateOrder:h2", "updateOrder");
    const broken = await links.recordOrderUpdated(
      { shop, sourceOrderId: "5002", key: "updateOrder:h2", orderHash: "h2", replaces: "h1" },
      {
        version: "2026-11-01T10:09:00Z",
        done: () => {
          throw new Error("planner bug");
        },
      },
    );
    expect(broken).toBe(false);
    expect(await links.loadLinks(shop, "5002")).toMatchObject({
      orderHash: "h2",
      syncedVersion: "2026-11-01T10:05:00Z",
    });
  });

  it("records a create's line-item links as one upsert after another would", async () => {
    const links = createLinkRepository(db);
    const shop = "lines.myshopify.com";
    await links.beginIntent(shop, "6001", "createOrder", "createOrder");
    const create = {
      shop,
      sourceOrderId: "6001",
      key: "createOrder",
      storeId: 1001,
      providerBaseUrl: "http://provider.test/v1",
      orderId: 60,
      orderHash: "h",
      orderName: "#6001",
      lineItems: [
        { sourceLineItemId: "a", lineItemId: 601, hash: "la" },
        { sourceLineItemId: "b", lineItemId: 602, hash: "lb" },
        // The same provider line twice: the first row's source line, the last hash.
        { sourceLineItemId: "c", lineItemId: 601, hash: "la2" },
      ],
    };
    await links.recordOrderCreated(create);
    const lines = (await links.loadLinks(shop, "6001"))?.lineItems ?? [];
    expect([...lines].sort((x, y) => Number(x.lineItemId) - Number(y.lineItemId))).toEqual([
      { sourceLineItemId: "a", lineItemId: 601, hash: "la2", canceledAt: null },
      { sourceLineItemId: "b", lineItemId: 602, hash: "lb", canceledAt: null },
    ]);
    // A create recorded again (an adoption after a lost answer) updates the same rows.
    await links.beginIntent(shop, "6001", "createOrder", "createOrder");
    await links.recordOrderCreated({ ...create, orderHash: "h2", lineItems: [] });
    expect(await links.loadLinks(shop, "6001")).toMatchObject({ orderId: 60, orderHash: "h2" });
  });

  it("reads a shop with every column under its property, as drizzle's select maps it", async () => {
    const shops = new ShopRepository(db);
    await shops.upsertShop("a.myshopify.com", {
      storeId: 1001,
      sendTestOrders: true,
      protectionVariantIds: ["gid://shopify/ProductVariant/1"],
      locationMap: { "655441491": 7 },
      defaultLocationId: 7,
      shopCurrency: "EUR",
    });
    await shops.upsertShop("b.myshopify.com", {});
    for (const shop of ["a.myshopify.com", "b.myshopify.com"]) {
      const [row] = await db.orm.select().from(db.t.shops).where(eq(db.t.shops.shop, shop));
      expect(await shops.getShop(shop)).toEqual({
        ...row,
        protectionVariantIds: JSON.parse(row?.protectionVariantIds ?? ""),
        locationMap: JSON.parse(row?.locationMap ?? ""),
      });
    }
    expect(await shops.getShop("a.myshopify.com")).toMatchObject({
      sendTestOrders: true,
      storeId: 1001,
      locationMap: { "655441491": 7 },
    });
    expect((await shops.getShop("b.myshopify.com"))?.sendTestOrders).toBe(false);
  });

  it("reads a shop's status alone, as the sync loop re-checks it before each call", async () => {
    const shops = new ShopRepository(db);
    expect(await shops.statusOf("nobody.myshopify.com")).toBeNull();
    await shops.upsertShop("a.myshopify.com", { storeId: 1001 });
    expect(await shops.statusOf("a.myshopify.com")).toBe("active");
    await shops.setStatus("a.myshopify.com", "uninstalled");
    expect(await shops.statusOf("a.myshopify.com")).toBe("uninstalled");
  });

  it("finds an order kept out by its ID or name, and counts by reason those not sent since", async () => {
    const shops = new ShopRepository(db);
    const links = createLinkRepository(db);
    const shop = "a.myshopify.com";
    await shops.markKeptOut(shop, "7001", "#1001", "test");
    await shops.markKeptOut(shop, "7002", "#1002", "no-address");
    await shops.markKeptOut(shop, "7003", "#1003", "no-address");
    // A row of a connector that kept no names, found by its ID only.
    await db.orm
      .insert(db.t.skippedTestOrders)
      .values({ shop, sourceOrderId: "7004", skippedAt: "2026-11-01T00:00:00Z" });
    expect(await shops.keptOutOrder(shop, "#1002")).toMatchObject({
      sourceOrderId: "7002",
      orderName: "#1002",
      reason: "no-address",
    });
    expect(await shops.keptOutOrder(shop, "1001")).toMatchObject({ sourceOrderId: "7001" });
    expect(await shops.keptOutOrder(shop, "7004")).toMatchObject({
      orderName: null,
      reason: "test",
    });
    expect(await shops.keptOutOrder("b.myshopify.com", "#1002")).toBeNull();
    expect(await shops.countKeptOutWithoutName(shop)).toBe(1);
    expect(await shops.countKeptOut(shop, "test")).toBe(2);
    expect(await shops.countKeptOut(shop, "no-address")).toBe(2);
    // An address added in Shopify, the order sent: it no longer counts as kept out.
    await links.recordOrderCreated({
      shop,
      sourceOrderId: "7003",
      key: "createOrder",
      storeId: 1001,
      providerBaseUrl: "http://provider.test/v1",
      orderId: 11,
      orderHash: "h",
      orderName: "#1003",
      lineItems: [{ sourceLineItemId: "a", lineItemId: 110, hash: "la" }],
    });
    expect(await shops.countKeptOut(shop, "no-address")).toBe(1);
  });

  it("keeps the Shopify version an order was last kept out at", async () => {
    const shops = new ShopRepository(db);
    const shop = "a.myshopify.com";
    expect(await shops.keptOutVersion(shop, "7001")).toBeNull();
    await shops.markKeptOut(shop, "7001", "#1001", "no-address", "2026-11-01T10:00:00-05:00");
    expect(await shops.keptOutVersion(shop, "7001")).toEqual({
      reason: "no-address",
      shopifyUpdatedAt: "2026-11-01T10:00:00-05:00",
    });
    // Kept out again at a later version, now as a test order: the latest decision stays.
    await shops.markKeptOut(shop, "7001", "#1001", "test", "2026-11-02T10:00:00-05:00");
    expect(await shops.keptOutVersion(shop, "7001")).toEqual({
      reason: "test",
      shopifyUpdatedAt: "2026-11-02T10:00:00-05:00",
    });
    // A row written before versions were kept has none: the sweep reads that order once more.
    await db.orm
      .insert(db.t.skippedTestOrders)
      .values({ shop, sourceOrderId: "7004", skippedAt: "2026-11-01T00:00:00Z" });
    expect(await shops.keptOutVersion(shop, "7004")).toEqual({
      reason: "test",
      shopifyUpdatedAt: null,
    });
  });

  it("counts failures of orders the provider does not have yet", async () => {
    const links = createLinkRepository(db);
    await links.markFailed("a.myshopify.com", "6001", "dead-lettered", {
      message: "fulfillments.0.fulfillmentLocationId: not mapped",
      category: "config",
      fields: [{ path: "fulfillments.0.fulfillmentLocationId", ref: "655441491" }],
    });
    expect(await links.countByResult("a.myshopify.com")).toEqual({
      synced: 0,
      failed: 0,
      deadLettered: 1,
    });
    const [latest] = await links.latestFailures("a.myshopify.com", 5);
    expect(latest?.failure).toEqual({
      message: "fulfillments.0.fulfillmentLocationId: not mapped",
      category: "config",
      fields: [{ path: "fulfillments.0.fulfillmentLocationId", ref: "655441491" }],
    });
    expect(await links.countFailures("a.myshopify.com", "config")).toBe(1);
    expect(await links.countFailures("a.myshopify.com", "protected-data")).toBe(0);
  });

  it("deletes one shop's data on shop/redact and nothing of another", async () => {
    const shops = new ShopRepository(db);
    const links = createLinkRepository(db);
    for (const shop of ["a.myshopify.com", "b.myshopify.com"]) {
      await shops.upsertShop(shop, {});
      await links.beginIntent(shop, "1", "createOrder", "createOrder");
      await links.recordOrderCreated({
        shop,
        sourceOrderId: "1",
        key: "createOrder",
        storeId: 1,
        providerBaseUrl: "http://provider.test/v1",
        orderId: 1,
        orderHash: "h",
        orderName: "#1",
        lineItems: [],
      });
    }
    await shops.deleteShopData("a.myshopify.com");
    expect(await shops.getShop("a.myshopify.com")).toBeNull();
    expect(await links.loadLinks("a.myshopify.com", "1")).toBeNull();
    expect(await links.loadLinks("b.myshopify.com", "1")).not.toBeNull();
  });
});
