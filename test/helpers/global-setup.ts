import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { stop as stopEsbuild } from "esbuild";
import type { TestProject } from "vitest/node";
import { bundle } from "../../scripts/bundle.ts";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { startPostgres } from "./postgres.ts";
import { startRedisCluster } from "./redis-cluster.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/**
 * One private redis-server, one three-master Redis Cluster and one PostgreSQL server for the
 * whole run; each test isolates itself with its own key prefix and its own database.
 *
 * The CLI the tests run in child processes is bundled once from the sources, as the production
 * build bundles it: a child then starts in about half a second, where loading some 450 modules
 * through the TypeScript loader took three seconds idle and over twenty on a loaded CI machine.
 */
export default async function setup(project: TestProject) {
  const cliDir = join(ROOT, "test-artifacts", `cli-${process.pid}`);
  const [redis, cluster, postgres] = await Promise.all([
    startRedisServer(),
    startRedisCluster(),
    startPostgres(),
    bundle({ cli: join(ROOT, "src/cli/index.ts") }, { outdir: cliDir }),
  ]);
  project.provide("cliBundle", join(cliDir, "cli.mjs"));
  project.provide("postgresUrl", postgres.url);
  project.provide("redisUrl", redis.url);
  project.provide(
    "redisClusterNodes",
    cluster.nodes.map((node) => `${node.host}:${node.port}`).join(","),
  );
  return async () => {
    // esbuild's service process (the bundle above) too: the leak check counts what is left.
    await Promise.all([redis.stop(), cluster.stop(), postgres.stop(), stopEsbuild()]);
    rmSync(cliDir, { recursive: true, force: true });
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    /** REDIS_CLUSTER_NODES of the run's Redis Cluster: `127.0.0.1:port,…`. */
    redisClusterNodes: string;
    /** The run's PostgreSQL server (`createTestDatabase` makes a database of one's own on it). */
    postgresUrl: string;
    /** The CLI bundled from this checkout's sources (`node <cliBundle> …`). */
    cliBundle: string;
  }
}
