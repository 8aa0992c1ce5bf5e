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
 * The CLI and the connector's process (`src/main.ts`) that the tests run in child processes are
 * bundled once from the sources, as the production build bundles them (with the development
 * tools in): a child then starts in under a second of CPU, where loading some 450 modules
 * through the TypeScript loader took three to five (and over twenty seconds of waiting on a
 * loaded CI machine). Only the tests of `npm start` itself go through the loader.
 */
export default async function setup(project: TestProject) {
  const bundleDir = join(ROOT, "test-artifacts", `bundle-${process.pid}`);
  const [redis, cluster, postgres] = await Promise.all([
    startRedisServer(),
    startRedisCluster(),
    startPostgres(),
    bundle(
      { cli: join(ROOT, "src/cli/index.ts"), main: join(ROOT, "src/main.ts") },
      { outdir: bundleDir },
    ),
  ]);
  project.provide("cliBundle", join(bundleDir, "cli.mjs"));
  project.provide("mainBundle", join(bundleDir, "main.mjs"));
  project.provide("postgresUrl", postgres.url);
  project.provide("redisUrl", redis.url);
  project.provide(
    "redisClusterNodes",
    cluster.nodes.map((node) => `${node.host}:${node.port}`).join(","),
  );
  return async () => {
    // esbuild's service process (the bundle above) too: the leak check counts what is left.
    await Promise.all([redis.stop(), cluster.stop(), postgres.stop(), stopEsbuild()]);
    rmSync(bundleDir, { recursive: true, force: true });
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
    /** The connector's process bundled from this checkout's `src/main.ts` (`node <mainBundle> …`). */
    mainBundle: string;
  }
}
