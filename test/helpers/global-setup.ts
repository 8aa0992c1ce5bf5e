import type { TestProject } from "vitest/node";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { startPostgres } from "./postgres.ts";
import { startRedisCluster } from "./redis-cluster.ts";

/**
 * One private redis-server, one three-master Redis Cluster and one PostgreSQL server for the
 * whole run; each test isolates itself with its own key prefix and its own database.
 */
export default async function setup(project: TestProject) {
  const [redis, cluster, postgres] = await Promise.all([
    startRedisServer(),
    startRedisCluster(),
    startPostgres(),
  ]);
  project.provide("postgresUrl", postgres.url);
  project.provide("redisUrl", redis.url);
  project.provide(
    "redisClusterNodes",
    cluster.nodes.map((node) => `${node.host}:${node.port}`).join(","),
  );
  return async () => {
    await Promise.all([redis.stop(), cluster.stop(), postgres.stop()]);
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** REDIS_CLUSTER_NODES of the run's Redis Cluster: `127.0.0.1:port,…`. */
    redisClusterNodes: string;
    /** The run's PostgreSQL server (`createTestDatabase` makes a database of one's own on it). */
    postgresUrl: string;
  }
}
