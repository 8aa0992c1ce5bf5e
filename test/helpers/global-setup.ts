import type { TestProject } from "vitest/node";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { startRedisCluster } from "./redis-cluster.ts";

/**
 * One private redis-server and one three-master Redis Cluster for the whole run; each test
 * isolates itself with its own key prefix.
 */
export default async function setup(project: TestProject) {
  const [redis, cluster] = await Promise.all([startRedisServer(), startRedisCluster()]);
  project.provide("redisUrl", redis.url);
  project.provide(
    "redisClusterNodes",
    cluster.nodes.map((node) => `${node.host}:${node.port}`).join(","),
  );
  return async () => {
    await Promise.all([redis.stop(), cluster.stop()]);
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** REDIS_CLUSTER_NODES of the run's Redis Cluster: `127.0.0.1:port,…`. */
    redisClusterNodes: string;
  }
}
