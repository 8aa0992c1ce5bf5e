import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { orderMarkId, SnapshotStore } from "../../src/ingest/snapshot-store.ts";
import type { ShopifyFulfillmentId } from "../../src/sync/source-order.ts";
import { service } from "../helpers/services.ts";
import { sourceFulfillment, sourceOrder } from "../helpers/source-order-factory.ts";

const redis = new Redis(service("redisUrl"));
let store: SnapshotStore;
const shop = "demo-shop.myshopify.com";

beforeEach(() => {
  store = new SnapshotStore(redis, { prefix: `t-${randomUUID()}` });
});
afterAll(() => redis.disconnect());

describe("SnapshotStore", () => {
  it("keeps an order only when its updated_at is newer", async () => {
    const v2 = sourceOrder({ updatedAt: "2026-11-01T12:00:00Z", note: "second" });
    const v1 = sourceOrder({ updatedAt: "2026-11-01T11:00:00Z", note: "first" });
    expect(await store.storeOrder(v2)).toBe("stored");
    expect(await store.storeOrder(v1)).toBe("older");
    expect(await store.storeOrder(v2)).toBe("same");
    const snap = await store.get(shop, v2.id);
    expect(snap?.order?.note).toBe("second");
    expect(snap?.orderVersion).toBe(Date.parse("2026-11-01T12:00:00Z"));
  });

  it("compares versions as instants, not strings, across offsets", async () => {
    // 10:30-05:00 is 15:30Z: later than 15:00Z although it sorts lower as text.
    expect(
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T15:00:00Z", note: "utc" })),
    ).toBe("stored");
    expect(
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T10:30:00-05:00", note: "est" })),
    ).toBe("stored");
    expect((await store.get(shop, "5001"))?.order?.note).toBe("est");
  });

  it("merges the newest version of each fulfillment from order and fulfillment webhooks", async () => {
    const fromOrder = sourceFulfillment({
      updatedAt: "2026-11-02T10:00:00Z",
      shipmentStatus: "in_transit",
    });
    await store.storeOrder(
      sourceOrder({ updatedAt: "2026-11-02T10:00:00Z", fulfillments: [fromOrder] }),
    );
    await store.storeFulfillment(
      shop,
      sourceFulfillment({ updatedAt: "2026-11-03T10:00:00Z", shipmentStatus: "delivered" }),
    );
    await store.storeFulfillment(
      shop,
      sourceFulfillment({ updatedAt: "2026-11-01T10:00:00Z", shipmentStatus: "label_printed" }),
    );
    await store.storeFulfillment(
      shop,
      sourceFulfillment({ id: "6002" as ShopifyFulfillmentId, updatedAt: "2026-11-03T11:00:00Z" }),
    );
    const snap = await store.get(shop, "5001");
    expect(snap?.order?.fulfillments.map((f) => [f.id, f.shipmentStatus])).toEqual([
      ["6001", "delivered"],
      ["6002", "in_transit"],
    ]);
  });

  it("holds fulfillments that arrive before their order as orphans", async () => {
    await store.storeFulfillment(shop, sourceFulfillment());
    const snap = await store.get(shop, "5001");
    expect(snap?.order).toBeNull();
    expect(snap?.orphanFulfillments).toHaveLength(1);
  });

  it("marks the snapshot stale when an edit hint is newer than the stored order, and clears it with a newer order", async () => {
    await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T10:00:00Z" }));
    await store.putHint(shop, "5001", Date.parse("2026-11-01T11:00:00Z"));
    expect((await store.get(shop, "5001"))?.staleSince).toBe(Date.parse("2026-11-01T11:00:00Z"));
    await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T11:00:05Z" }));
    expect((await store.get(shop, "5001"))?.staleSince).toBeNull();
  });

  it("deletes one order's or a whole shop's snapshots", async () => {
    await store.storeOrder(sourceOrder());
    await store.storeOrder(sourceOrder({ id: "5002" as never }));
    expect(await store.delete(shop, ["5001"])).toBe(1);
    expect(await store.get(shop, "5001")).toBeNull();
    expect(await store.deleteShop(shop)).toBe(1);
    expect(await store.get(shop, "5002")).toBeNull();
  });

  describe("with the receiver's dedupe mark (kept in the snapshot: one read, one write)", () => {
    const seen = (name: string) => ({
      id: orderMarkId("orders/updated", `${randomUUID()}-${name}`),
      ttlSeconds: 60,
    });
    const marked = async (orderId: string, mark: { id: string }) =>
      ((await redis.hget(store.key(shop, orderId), "m")) ?? "").includes(`${mark.id}:`);

    it("answers duplicate and writes nothing when the event was already marked", async () => {
      const mark = seen("e1");
      const order = sourceOrder({ updatedAt: "2026-11-01T12:00:00Z", note: "first" });
      expect(await store.storeOrder(order, { seen: mark })).toBe("stored");
      expect(await store.mark(store.key(shop, order.id), mark)).toBe(true);
      const newer = sourceOrder({ updatedAt: "2026-11-01T13:00:00Z", note: "newer" });
      expect(await store.storeOrder(newer, { seen: mark })).toBe("duplicate");
      expect(await store.storeFulfillment(shop, sourceFulfillment(), { seen: mark })).toBe(
        "duplicate",
      );
      expect(await store.putHint(shop, order.id, Date.now(), { seen: mark })).toBe("duplicate");
      const snap = await store.get(shop, order.id);
      expect(snap?.order?.note).toBe("first");
      expect(snap?.orphanFulfillments).toEqual([]);
      expect(snap?.staleSince).toBeNull();
    });

    it("stores a newer order and leaves the mark to the receiver, which sets it after the job", async () => {
      const mark = seen("e2");
      const order = sourceOrder({ updatedAt: "2026-11-01T12:00:00Z", note: "new" });
      expect(await store.storeOrder(order, { seen: mark })).toBe("stored");
      expect(await marked(order.id, mark)).toBe(false);
      expect((await store.get(shop, order.id))?.order?.note).toBe("new");
      // A retry of a delivery whose job failed meets the same version, unmarked: queued again.
      expect(await store.storeOrder(order, { seen: mark })).toBe("same");
      expect(await marked(order.id, mark)).toBe(false);
    });

    it("marks an older delivery in the same call, since no job follows it", async () => {
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T12:00:00Z", note: "newer" }));
      const mark = seen("e3");
      const older = sourceOrder({ updatedAt: "2026-11-01T11:00:00Z", note: "older" });
      expect(await store.storeOrder(older, { seen: mark })).toBe("older");
      expect(await marked(older.id, mark)).toBe(true);
      expect((await store.get(shop, older.id))?.order?.note).toBe("newer");
      expect(await store.storeOrder(older, { seen: mark })).toBe("duplicate");
    });

    it("applies the same rules to fulfillments: newer stored unmarked, older marked", async () => {
      const newer = sourceFulfillment({ updatedAt: "2026-11-03T10:00:00Z" });
      const older = sourceFulfillment({ updatedAt: "2026-11-02T10:00:00Z" });
      const first = seen("f1");
      const second = seen("f2");
      expect(await store.storeFulfillment(shop, newer, { seen: first })).toBe("stored");
      expect(await marked("5001", first)).toBe(false);
      expect(await store.storeFulfillment(shop, older, { seen: second })).toBe("older");
      expect(await marked("5001", second)).toBe(true);
      const snap = await store.get(shop, "5001");
      expect(snap?.orphanFulfillments.map((f) => f.updatedAt)).toEqual(["2026-11-03T10:00:00Z"]);
    });

    it("records a hint as stored and leaves its mark to the receiver (a hint always needs a job)", async () => {
      const mark = seen("h1");
      const at = Date.parse("2026-11-01T11:00:00Z");
      expect(await store.putHint(shop, "5001", at, { seen: mark })).toBe("stored");
      expect(await marked("5001", mark)).toBe(false);
      expect((await store.get(shop, "5001"))?.staleSince).toBe(at);
    });

    it("keeps a mark 72 hours as its own key did, and drops the expired ones at the next write", async () => {
      const key = store.key(shop, "5001");
      const mark = { id: orderMarkId("orders/updated", "old"), ttlSeconds: 72 * 3600 };
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T12:00:00Z" }));
      expect(await store.mark(key, mark)).toBe(true);
      const [, expires] = /:(\d+);$/.exec((await redis.hget(key, "m")) ?? "") ?? [];
      expect(Number(expires) - Date.now() / 1000).toBeGreaterThan(72 * 3600 - 5);
      // The same mark, already expired (written as if 73 hours ago): not a duplicate, and gone.
      await redis.hset(key, "m", `${mark.id}:${Math.floor(Date.now() / 1000) - 3600};`);
      const next = seen("n1");
      expect(
        await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T11:00:00Z" }), { seen: mark }),
      ).toBe("older");
      expect(
        await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T10:00:00Z" }), { seen: next }),
      ).toBe("older");
      const entries = ((await redis.hget(key, "m")) ?? "").split(";").filter(Boolean);
      expect(entries.map((e) => e.split(":")[0])).toEqual([mark.id, next.id]);
    });

    it("takes no mark into a snapshot that is gone (no hash is left without an expiry)", async () => {
      expect(await store.mark(store.key(shop, "5999"), seen("g1"))).toBe(false);
      expect(await redis.exists(store.key(shop, "5999"))).toBe(0);
    });
  });

  describe("the snapshot's expiry", () => {
    it("is set with a new hash and renewed only once less than half of it is left", async () => {
      const key = store.key(shop, "5001");
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T10:00:00Z" }));
      const ttl = store.ttlMs;
      expect(await redis.pttl(key)).toBeGreaterThan(ttl - 5_000);
      // More than half left: a write does not renew it.
      await redis.pexpire(key, Math.round(ttl * 0.6));
      await redis.hset(key, "x", String(Date.now() + Math.round(ttl * 0.6)));
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T11:00:00Z" }));
      expect(await redis.pttl(key)).toBeLessThanOrEqual(Math.round(ttl * 0.6));
      // Less than half left: renewed.
      await redis.pexpire(key, Math.round(ttl * 0.4));
      await redis.hset(key, "x", String(Date.now() + Math.round(ttl * 0.4)));
      await store.storeOrder(sourceOrder({ updatedAt: "2026-11-01T12:00:00Z" }));
      expect(await redis.pttl(key)).toBeGreaterThan(ttl - 5_000);
      // A hash written before the moment was kept (no x) gets it, and its expiry, at once.
      await redis.hdel(key, "x");
      await redis.pexpire(key, 60_000);
      await store.putHint(shop, "5001", Date.now());
      expect(await redis.pttl(key)).toBeGreaterThan(ttl - 5_000);
    });
  });
});
