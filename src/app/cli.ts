import { existsSync, readFileSync } from "node:fs";
import { pino } from "pino";
import { ConfigError } from "../config/env.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import { createLogger } from "../lib/logger.ts";
import type { RedisTarget } from "../lib/redis-keys.ts";
import { type Core, createCore } from "./connector.ts";
import { redisUrlFile } from "./infrastructure.ts";

/**
 * The Redis the connector uses: REDIS_CLUSTER_NODES, REDIS_URL, or the private redis-server a running `npm start`
 * wrote next to the database.
 */
export function resolveRedis(config: RuntimeConfig): RedisTarget {
  if (config.env.REDIS_CLUSTER_NODES) return config.env.REDIS_CLUSTER_NODES;
  if (config.env.REDIS_URL) return config.env.REDIS_URL;
  const file = redisUrlFile(config.env.DATABASE_PATH);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  throw new ConfigError(
    "REDIS_URL is not set and no running `npm start` was found (no " +
      `${file}); set REDIS_URL to the connector's Redis`,
  );
}

/**
 * The CLI's composition root: runs an action against the same Redis and SQLite the connector
 * uses, through the same core the processes build (queues, snapshots, limiter, stores, the
 * Shopify side; never the provider), and closes it afterwards. Logs go to stderr at warn, so
 * stdout stays the command's output.
 */
export async function withContext<T>(
  config: RuntimeConfig,
  action: (ctx: Core) => Promise<T>,
): Promise<T> {
  const ctx = createCore({
    config,
    logger: createLogger(
      config.env.LOG_LEVEL === "info" ? "warn" : config.env.LOG_LEVEL,
      pino.destination(2),
    ),
    redis: resolveRedis(config),
    prefix: config.env.REDIS_PREFIX,
  });
  try {
    await Promise.race([
      ctx.ready(),
      new Promise((_, reject) =>
        setTimeout(
          () => reject(new ConfigError("could not reach Redis within 5 s")),
          5_000,
        ).unref(),
      ),
    ]);
    return await action(ctx);
  } finally {
    await ctx.close();
  }
}
