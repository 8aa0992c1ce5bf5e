import { randomUUID } from "node:crypto";
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreRateLimiter } from "../../src/engine/limiter/index.ts";
import { orderMarkId, SnapshotStore } from "../../src/ingest/snapshot-store.ts";
import { releaseLock } from "../../src/lib/lock.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { type RedisClusterHandle, startRedisCluster } from "../helpers/redis-cluster.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

// The connector's own Redis scripts and multi-key commands on a real three-master Redis Cluster
// (redis-server --cluster-enabled, joined with redis-cli --cluster create): every script's keys
// must hash to one slot, and what spans orders must not send keys of several slots at once.
let cluster: RedisClusterHandle;
let redis: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
  redis = cluster.connect();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

const shop = "cluster-shop.myshopify.com" as ShopDomain;
const order = (id: number) =>
  sourceOrder({ shop, id: String(id) as ShopifyOrderId, name: `#${id}` });

describe("on a Redis Cluster", () => {
  it("runs every limiter script: a store's keys share its slot", async () => {
    const limiter = new StoreRateLimiter(redis, {
      limit: 5,
      windowMs: 2_000,
      paceBulk: true,
      liveSlowStart: true,
      prefix: `lim-${randomUUID()}`,
    });
    const granted = await limiter.acquire(1001, "live");
    expect(granted.granted).toBe(true);
    if (!granted.granted) return;
    await limiter.spend(1001, granted.slotId, async () => {
      await limiter.providerHooks().beforeSend(1001);
      await limiter.observe(1001, { limit: 5, remaining: 4, resetMs: 2_000 });
    });
    const spare = await limiter.acquire(1001, "bulk");
    if (spare.granted) await limiter.release(1001, spare.slotId);
    const inspection = await limiter.inspect(1001);
    expect(inspection.used).toBe(1);
    expect(await limiter.block(1001, 1_000)).toBeGreaterThan(await limiter.nowMs());
  });

  it("checks an order event's mark in its snapshot and writes both in one script", async () => {
    const prefix = `snap-${randomUUID()}`;
    const snapshots = new SnapshotStore(redis, { prefix });
    const seen = { id: orderMarkId("orders/create", "e-1"), ttlSeconds: 60 };
    expect(await snapshots.storeOrder(order(7001), { seen })).toBe("stored");
    // A delivery that needs a job is marked once its job is queued (the cluster's last call).
    expect(await snapshots.mark(snapshots.key(shop, "7001"), seen)).toBe(true);
    expect(await snapshots.storeOrder(order(7001), { seen })).toBe("duplicate");
  });

  it("finds and deletes a shop's snapshots on every master", async () => {
    const snapshots = new SnapshotStore(redis, { prefix: `del-${randomUUID()}` });
    const ids = Array.from({ length: 30 }, (_, i) => 8000 + i);
    for (const id of ids) await snapshots.storeOrder(order(id));
    // Thirty orders spread over the three masters' slots.
    const slots = new Set(
      await Promise.all(
        ids.map(async (id) =>
          Number(await redis.cluster("KEYSLOT", snapshots.key(shop, String(id)))),
        ),
      ),
    );
    expect(slots.size).toBeGreaterThan(1);
    expect(await snapshots.delete(shop, ["8000", "8001", "8002"])).toBe(3);
    expect(await snapshots.deleteShop(shop)).toBe(27);
    expect(await snapshots.get(shop, "8010")).toBeNull();
  });

  it("releases a lock only for its owner", async () => {
    const lock = `lock-${randomUUID()}`;
    await redis.set(lock, "owner-a", "PX", 10_000, "NX");
    expect(await releaseLock(redis, lock, "owner-b")).toBe(false);
    expect(await releaseLock(redis, lock, "owner-a")).toBe(true);
    expect(await redis.exists(lock)).toBe(0);
  });
});
