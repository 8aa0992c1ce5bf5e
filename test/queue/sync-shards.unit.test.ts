import calculateSlot from "cluster-key-slot";
import { describe, expect, it } from "vitest";
import {
  CLUSTER_SLOTS,
  parseSyncShardName,
  shardHashTag,
  shardOf,
  syncShardName,
  syncShardNames,
} from "../../src/queue/sync-shards.ts";

/** The documented hash (docs/configuration.md, "Sharding the sync queue"), pinned. */
describe("a store's sync shard", () => {
  it("is the first 4 bytes of SHA-1 of the shop domain, big-endian, mod N", () => {
    // sha1("a.myshopify.com") starts c2 37 32 dd = 3,258,397,405; sha1("b.…") 17 f4 cd 81.
    expect(shardOf("a.myshopify.com", 3)).toBe(3_258_397_405 % 3);
    expect(shardOf("a.myshopify.com", 5)).toBe(0);
    expect(shardOf("b.myshopify.com", 5)).toBe(401_919_361 % 5);
    expect(shardOf("lifecycle-shop.myshopify.com", 3)).toBe(0);
  });

  it("is 0 with one shard, and the same on every call", () => {
    expect(shardOf("a.myshopify.com", 1)).toBe(0);
    for (let i = 0; i < 5; i++)
      expect(shardOf("a.myshopify.com", 7)).toBe(shardOf("a.myshopify.com", 7));
  });

  it("spreads stores over every shard", () => {
    const counts = new Map<number, number>();
    for (let i = 0; i < 3_000; i++) {
      const shard = shardOf(`store-${i}.myshopify.com`, 3);
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual([0, 1, 2]);
    for (const count of counts.values()) expect(count).toBeGreaterThan(900);
  });
});

describe("the sync shards' names and hash tags", () => {
  it("keeps the queue `sync` with one shard and names N shards sync-1ofN … sync-NofN", () => {
    expect(syncShardNames(1)).toEqual(["sync"]);
    expect(syncShardNames(3)).toEqual(["sync-1of3", "sync-2of3", "sync-3of3"]);
    for (const n of [1, 2, 3, 12]) {
      for (let i = 0; i < n; i++) {
        expect(parseSyncShardName(syncShardName(n, i))).toEqual({ count: n, index: i });
      }
    }
    expect(parseSyncShardName("dead-letter")).toBeUndefined();
    expect(parseSyncShardName("sync-4of3")).toBeUndefined();
    expect(parseSyncShardName("sync-1of1")).toBeUndefined();
  });

  it("gives shard i of N a tag whose slot is in the i-th of N equal runs of slots", () => {
    expect(shardHashTag("connector", 1, 0)).toBe("connector");
    for (const n of [2, 3, 4, 6, 9]) {
      const tags = Array.from({ length: n }, (_, i) => shardHashTag("connector", n, i));
      expect(new Set(tags).size).toBe(n);
      tags.forEach((tag, i) => {
        const slot = calculateSlot(tag);
        expect(slot).toBeGreaterThanOrEqual(Math.floor((i * CLUSTER_SLOTS) / n));
        expect(slot).toBeLessThan(Math.floor(((i + 1) * CLUSTER_SLOTS) / n));
        expect(tag.startsWith(`connector:${syncShardName(n, i)}`)).toBe(true);
      });
    }
  });
});
