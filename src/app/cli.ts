import { existsSync, readFileSync } from "node:fs";
import { pino } from "pino";
import { ConfigError } from "../config/env.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import type { ProviderEndpoints } from "../engine/provider-clients.ts";
import { createLogger } from "../lib/logger.ts";
import type { RedisTarget } from "../lib/redis-keys.ts";
import { type Core, createCore, createProviderClients } from "./connector.ts";
import { redisUrlFile, sandboxEndpointsFile } from "./infrastructure.ts";
import { createProducts, type ProductsKit } from "./products.ts";

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
 * Shopify side; the provider only through `withProducts`), and closes it afterwards. Logs go to stderr at warn, so
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

/**
 * The provider the CLI's product commands call when a shop names none of its own:
 * PROVIDER_BASE_URL (with PROVIDER_AUTH_URL and PROVIDER_AUDIENCE), or outside production the
 * built-in sandbox a running `npm start` wrote next to the database; null when neither.
 */
export function resolveProviderEndpoints(config: RuntimeConfig): ProviderEndpoints | null {
  const { env } = config;
  if (env.PROVIDER_BASE_URL) {
    if (!env.PROVIDER_AUTH_URL || !env.PROVIDER_AUDIENCE) {
      throw new ConfigError(
        "invalid environment:\n  PROVIDER_AUTH_URL, PROVIDER_AUDIENCE: required with PROVIDER_BASE_URL",
      );
    }
    return {
      baseUrl: env.PROVIDER_BASE_URL,
      authUrl: env.PROVIDER_AUTH_URL,
      audience: env.PROVIDER_AUDIENCE,
    };
  }
  if (env.NODE_ENV === "production") return null;
  const file = sandboxEndpointsFile(env.DATABASE_PATH);
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as ProviderEndpoints;
}

const NO_PROVIDER: ProviderEndpoints = { baseUrl: "", authUrl: "", audience: "" };

/**
 * `withContext` and the product commands' provider side: clients wired to the same per-store
 * limiter the workers use (bulk priority, 429s shared), the import record and the importer.
 */
export async function withProducts<T>(
  config: RuntimeConfig,
  action: (ctx: Core & { products: ProductsKit }) => Promise<T>,
): Promise<T> {
  const defaults = resolveProviderEndpoints(config);
  return withContext(config, async (core) => {
    const providers = createProviderClients(core, { providerDefaults: defaults ?? NO_PROVIDER });
    const products = createProducts(core, providers, {
      endpointsKnown: (shop) =>
        defaults !== null ||
        (!!shop.providerBaseUrl && !!shop.providerAuthUrl && !!shop.providerAudience),
    });
    return action({ ...core, products });
  });
}
