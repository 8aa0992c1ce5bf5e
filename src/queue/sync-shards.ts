import { createHash } from "node:crypto";
import calculateSlot from "cluster-key-slot";
import { Cluster } from "ioredis";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { QUEUE } from "./names.ts";

/**
 * The sync queue in shards (SYNC_QUEUE_SHARDS). BullMQ keeps a queue in one Redis Cluster slot,
 * so one sync queue lives on one master; N shards, each with its own hash tag, can sit on N.
 *
 * - A store's shard among N: the first 4 bytes of SHA-1(shop domain), read big-endian, mod N.
 *   Every process computes the same; a store's jobs are all in one shard of a layout.
 * - A layout is a shard count. Layout 1 is the queue `sync` with the keys it always had (no
 *   migration); layout N > 1 is the queues `sync-1ofN` … `sync-NofN`.
 * - On a Redis Cluster, shard i of N takes the hash tag `{prefix:sync-(i+1)ofN}` (or that with
 *   `:k` appended, the smallest k that works) whose slot lies in the i-th of N equal runs of the
 *   16,384 slots: on a cluster whose masters hold equal runs of slots, as `redis-cli --cluster
 *   create` makes them, N shards on N masters sit one per master. Layout 1 keeps `{prefix}`.
 * - Every layout ever used is recorded in Redis (`layoutsKey`, a sorted set scored by when it
 *   was first used). Workers consume every recorded layout; a layout no longer configured is
 *   dropped from the record once all its shards are empty, and a producer still configured with
 *   it records it again (`REGISTER_MS`), so a job is never left where no worker reads.
 */

export const CLUSTER_SLOTS = 16_384;

/** How often a process records its own layout again and reads the others. */
export const REGISTER_MS = 30_000;

export const layoutsKey = (prefix: string) => `${prefix}:sync-shard-layouts`;

/** The store's shard among `count`: SHA-1 of the shop domain, first 4 bytes, mod count. */
export function shardOf(shop: string, count: number): number {
  if (count <= 1) return 0;
  return createHash("sha1").update(shop).digest().readUInt32BE(0) % count;
}

/** The queue name of shard `index` (0-based) of layout `count`. */
export const syncShardName = (count: number, index: number) =>
  count <= 1 ? QUEUE.sync : `${QUEUE.sync}-${index + 1}of${count}`;

/** Every queue name of one layout, in shard order. */
export const syncShardNames = (count: number) =>
  Array.from({ length: Math.max(1, count) }, (_, i) => syncShardName(count, i));

/** Which layout and shard a sync queue name is, or undefined for a name that is none. */
export function parseSyncShardName(name: string): { count: number; index: number } | undefined {
  if (name === QUEUE.sync) return { count: 1, index: 0 };
  const match = /^sync-(\d+)of(\d+)$/.exec(name);
  if (!match) return undefined;
  const count = Number(match[2]);
  const index = Number(match[1]) - 1;
  return count > 1 && index >= 0 && index < count ? { count, index } : undefined;
}

/**
 * The hash tag of shard `index` of `count` on a Redis Cluster: the first candidate whose slot
 * is in the shard's run of slots (about `count` candidates are tried on average).
 */
export function shardHashTag(prefix: string, count: number, index: number): string {
  if (count <= 1) return prefix;
  const base = `${prefix}:${syncShardName(count, index)}`;
  const low = Math.floor((index * CLUSTER_SLOTS) / count);
  const high = Math.floor(((index + 1) * CLUSTER_SLOTS) / count);
  for (let k = 0; ; k++) {
    const tag = k === 0 ? base : `${base}:${k}`;
    const slot = calculateSlot(tag);
    if (slot >= low && slot < high) return tag;
  }
}

/**
 * BullMQ's options for one sync shard. On one Redis the prefix is the plain prefix (the queue
 * name tells the shards apart); on a cluster, the shard's hash tag.
 */
export function syncShardOptions<C extends RedisConnection>(
  connection: C,
  prefix: string,
  count: number,
  index: number,
): { connection: C; prefix: string } {
  if (!(connection instanceof Cluster)) return { connection, prefix };
  return { connection, prefix: `{${shardHashTag(prefix, count, index)}}` };
}

/**
 * The shard count to use: SYNC_QUEUE_SHARDS when set; else on a cluster the number of masters
 * that hold slots, on one Redis 1.
 */
export async function resolveShardCount(
  connection: RedisConnection,
  configured: number | undefined,
): Promise<number> {
  if (configured !== undefined) return configured;
  if (!(connection instanceof Cluster)) return 1;
  const slots = (await connection.cluster("SLOTS")) as unknown as [
    number,
    number,
    [string, number, string?],
  ][];
  const masters = new Set(slots.map((range) => range[2][2] ?? `${range[2][0]}:${range[2][1]}`));
  return Math.max(1, masters.size);
}

/**
 * Records `count` as in use and answers every recorded layout, oldest first. The first record
 * ever made also records layout 1 as older when the queue `sync` was ever used (`legacyInUse`):
 * a deployment from before the shards may have left jobs there, read until it is empty.
 */
export async function registerLayout(
  redis: RedisConnection,
  prefix: string,
  count: number,
  legacyInUse: () => Promise<boolean>,
  now = Date.now(),
): Promise<number[]> {
  const key = layoutsKey(prefix);
  if (count !== 1 && (await redis.exists(key)) === 0 && (await legacyInUse())) {
    await redis.zadd(key, "NX", now - 1, "1");
  }
  await redis.zadd(key, "NX", now, String(count));
  return readLayouts(redis, prefix);
}

/** Every recorded layout, oldest first. */
export async function readLayouts(redis: RedisConnection, prefix: string): Promise<number[]> {
  const members = await redis.zrange(layoutsKey(prefix), "0", "-1");
  return members.map(Number).filter((n) => Number.isInteger(n) && n >= 1);
}

/** Drops a layout whose shards are all empty from the record (see the module's comment). */
export async function retireLayout(redis: RedisConnection, prefix: string, count: number) {
  await redis.zrem(layoutsKey(prefix), String(count));
}
