import { Cluster, type Redis } from "ioredis";
import type { RedisClusterTarget } from "../config/env.ts";
import { redactedUrl } from "./redact.ts";

/** Where Redis is: a `redis://` URL (one server), or a Redis Cluster's seed nodes. */
export type RedisTarget = string | RedisClusterTarget;

export const isClusterTarget = (target: RedisTarget): target is RedisClusterTarget =>
  typeof target !== "string";

/** The setting that names the target: REDIS_CLUSTER_NODES for a cluster, else REDIS_URL. */
export const redisVariable = (target: RedisTarget) =>
  isClusterTarget(target) ? "REDIS_CLUSTER_NODES" : "REDIS_URL";

/** The target for a log line or an error: the URL without its password, or the seed nodes. */
export function describeTarget(target: RedisTarget): string {
  if (isClusterTarget(target)) {
    return target.nodes.map((n) => `${n.host}:${n.port}`).join(",");
  }
  return redactedUrl(target);
}

/** A standalone Redis or a Redis Cluster (ioredis's `Cluster`): our stores work on either. */
export type RedisConnection = Redis | Cluster;

/**
 * The keys matching a pattern, in batches. On a Redis Cluster every master holds its own slots,
 * so each master is scanned in turn; a standalone Redis is scanned once.
 */
export async function* scanKeys(
  redis: RedisConnection,
  match: string,
  count = 500,
): AsyncGenerator<string[]> {
  const nodes = redis instanceof Cluster ? redis.nodes("master") : [redis];
  for (const node of nodes) {
    for await (const batch of node.scanStream({ match, count }) as AsyncIterable<string[]>) {
      if (batch.length > 0) yield batch;
    }
  }
}

/**
 * Deletes keys that may live in different slots: one DEL on a standalone Redis; on a cluster,
 * one DEL per key (a DEL of keys in several slots is refused with CROSSSLOT). Returns how many
 * existed.
 */
export async function deleteKeys(redis: RedisConnection, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  if (!(redis instanceof Cluster)) return redis.del(...keys);
  const removed = await Promise.all(keys.map((key) => redis.del(key)));
  return removed.reduce((sum, n) => sum + n, 0);
}

/** A new connection with the same options (BullMQ workers block on a connection of their own). */
export function duplicateConnection(redis: RedisConnection): RedisConnection {
  return redis instanceof Cluster ? redis.duplicate() : redis.duplicate();
}
