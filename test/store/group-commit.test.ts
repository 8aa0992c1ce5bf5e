import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLinkRepository,
  type Db,
  type LinkRepository,
  openDatabase,
} from "../../src/store/index.ts";

// The SQLite link store commits the writes asked for in one turn of the event loop together
// (the worker's concurrent jobs' intents and finishing writes): one transaction, each write in
// a savepoint of its own.

let dir: string;
let db: Db;
let links: LinkRepository;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "group-commit-"));
  db = openDatabase(join(dir, "connector.sqlite"));
  links = createLinkRepository(db);
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

const shop = "group.myshopify.com";

function sqlite() {
  if (db.dialect !== "sqlite") throw new Error("a SQLite store was expected");
  return db.sqlite.$client;
}

/** Frames in the write-ahead log after emptying it: each commit appends the pages it changed. */
function walFrames(): number {
  const [row] = sqlite().pragma("wal_checkpoint(PASSIVE)") as { log: number }[];
  return row?.log ?? 0;
}

function created(sourceOrderId: string, lineItemId: number | null) {
  return {
    shop,
    sourceOrderId,
    key: "createOrder",
    storeId: 1001,
    providerBaseUrl: "http://provider.test/v1",
    orderId: Number(sourceOrderId),
    orderHash: `h${sourceOrderId}`,
    orderName: `#${sourceOrderId}`,
    // A null line-item ID breaks the NOT NULL of line_item_links: that write fails midway.
    lineItems: [{ sourceLineItemId: "a", lineItemId: lineItemId as number, hash: "la" }],
  };
}

describe("the SQLite link store's group commit", () => {
  it("commits the writes of one turn together: the log grows as for one write, not ten", async () => {
    sqlite().pragma("wal_checkpoint(TRUNCATE)");
    await links.beginIntent(shop, "1", "createOrder", "createOrder");
    await links.recordOrderCreated(created("1", 100));
    const alone = walFrames();
    sqlite().pragma("wal_checkpoint(TRUNCATE)");
    expect(walFrames()).toBe(0);

    const orders = Array.from({ length: 10 }, (_, i) => String(2 + i));
    await Promise.all(
      orders.map((id) => links.beginIntent(shop, id, "createOrder", "createOrder")),
    );
    await Promise.all(orders.map((id) => links.recordOrderCreated(created(id, 200 + Number(id)))));
    // Two turns (the intents, then the effects): two commits of about one write's pages each.
    // One commit per write appended each shared page ten times over.
    expect(walFrames()).toBeLessThanOrEqual(3 * alone);
    for (const id of orders) {
      expect((await links.loadLinks(shop, id))?.lineItems).toHaveLength(1);
    }
  });

  it("rolls back a failing write alone: the others of its turn are committed", async () => {
    await Promise.all(
      ["1", "2", "3"].map((id) => links.beginIntent(shop, id, "createOrder", "createOrder")),
    );
    const results = await Promise.allSettled([
      links.recordOrderCreated(created("1", 101)),
      links.recordOrderCreated(created("2", null)),
      links.recordOrderCreated(created("3", 103)),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(
      /NOT NULL constraint failed: line_item_links\.line_item_id/,
    );
    // The failing write's earlier steps (its order link, written before the line) are undone,
    // and its intent stays pending: its next attempt looks the order up first.
    expect(await links.loadLinks(shop, "2")).toBeNull();
    expect(await links.beginIntent(shop, "2", "createOrder", "createOrder")).toMatchObject({
      attempts: 2,
    });
    expect((await links.loadLinks(shop, "1"))?.lineItems).toEqual([
      expect.objectContaining({ lineItemId: 101 }),
    ]);
    expect((await links.loadLinks(shop, "3"))?.lineItems).toEqual([
      expect.objectContaining({ lineItemId: 103 }),
    ]);
  });

  it("rolls back a failing write alone in its turn whole, and rejects it", async () => {
    await links.beginIntent(shop, "4", "createOrder", "createOrder");
    await expect(links.recordOrderCreated(created("4", null))).rejects.toThrow(
      /NOT NULL constraint failed: line_item_links\.line_item_id/,
    );
    expect(sqlite().inTransaction).toBe(false);
    expect(await links.loadLinks(shop, "4")).toBeNull();
    expect(await links.beginIntent(shop, "4", "createOrder", "createOrder")).toMatchObject({
      attempts: 2,
    });
    // The next write of its own turn commits as usual.
    await links.recordOrderCreated(created("4", 104));
    expect((await links.loadLinks(shop, "4"))?.lineItems).toEqual([
      expect.objectContaining({ lineItemId: 104 }),
    ]);
  });

  it("answers an intent only once it is committed: another connection reads it", async () => {
    const intent = links.beginIntent(shop, "7", "createOrder", "createOrder");
    await intent;
    const other = openDatabase(join(dir, "connector.sqlite"));
    try {
      const row = (other.dialect === "sqlite" ? other.sqlite.$client : null)
        ?.prepare("select status, attempts from intents where source_order_id = '7'")
        .get();
      expect(row).toEqual({ status: "pending", attempts: 1 });
    } finally {
      await other.close();
    }
  });
});
