import type { Cluster, Redis } from "ioredis";

/**
 * Redis coming back empty, for one pipeline: every key under its prefix deleted. Not FLUSHALL:
 * the run's Redis is shared by the test files running beside this one.
 */
export async function loseRedisData(redis: Redis | Cluster, prefix: string): Promise<void> {
  const nodes = "nodes" in redis ? redis.nodes("master") : [redis];
  // On a cluster BullMQ's keys are under `{prefix}` (src/queue/names.ts), the connector's own
  // under `prefix`.
  for (const match of [`${prefix}:*`, `{${prefix}}:*`]) {
    for (const node of nodes) {
      for await (const keys of node.scanStream({ match, count: 1000 })) {
        for (const key of keys as string[]) await redis.del(key);
      }
    }
  }
}
