import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve as resolvePath } from "node:path";
import { pino } from "pino";
import { ConfigError, configuredProvider } from "../config/env.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import type { ProviderEndpoints } from "../engine/provider-clients.ts";
import { createProducts, type ProductsKit } from "../features/products/compose.ts";
import { RegistrationReader } from "../features/registrations/index.ts";
import { createLogger } from "../lib/logger.ts";
import { ServiceLostError, whileAnswering } from "../lib/outage.ts";
import { describeTarget, type RedisTarget, redisVariable } from "../lib/redis-keys.ts";
import { ANSWER_MS, redisHeartbeat, redisLost, whyRedisUnreachable } from "../lib/redis-wait.ts";
import { startTracing } from "../lib/tracing.ts";
import { databaseHeartbeat, waitForDatabase } from "../store/index.ts";
import { type Connector, type Core, createCore, createProviderClients } from "./connector.ts";
import { redisUrlFile, sandboxEndpointsFile } from "./infrastructure.ts";

/**
 * The Redis the connector uses: REDIS_CLUSTER_NODES, REDIS_URL, or the private redis-server a running `npm start`
 * wrote next to the database.
 */
export function resolveRedis(config: RuntimeConfig): RedisTarget {
  if (config.env.REDIS_CLUSTER_NODES) return config.env.REDIS_CLUSTER_NODES;
  if (config.env.REDIS_URL) return config.env.REDIS_URL;
  const file = redisUrlFile(config.env.DATABASE_PATH);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  // Most often the connector is simply not running yet (a laptop, after a reboot): say so first.
  throw new ConfigError(
    `no connector is running on ${dirname(resolvePath(config.env.DATABASE_PATH))} (no ${file}, which \`npm start\` writes) and REDIS_URL is not set: start it with \`npm start\`, or set REDIS_URL to the connector's Redis`,
  );
}

/**
 * The CLI's composition root: runs an action against the same Redis and SQLite the connector
 * uses, through the same core the processes build (queues, snapshots, limiter, stores, the
 * Shopify side; the provider only through `withProvider`), and closes it afterwards. Logs go to stderr at warn, so
 * stdout stays the command's output.
 */
export async function withContext<T>(
  config: RuntimeConfig,
  action: (ctx: Core) => Promise<T>,
): Promise<T> {
  // A resync or a DLQ retry run from the CLI is traced like the processes' work when asked.
  const tracing = await startTracing(process.env, {
    production: config.env.NODE_ENV === "production",
  });
  const redis = resolveRedis(config);
  // One attempt first, so that a Redis that is down or refuses the credentials is named with
  // its cause at once, before the command's connections start retrying in the background.
  const unreachable = await whyRedisUnreachable(redis);
  if (unreachable !== null) {
    if (!config.env.REDIS_URL && !config.env.REDIS_CLUSTER_NODES) {
      // The address came from redis.url, which a start that was killed leaves behind.
      throw new ConfigError(
        `no connector answers on ${dirname(resolvePath(config.env.DATABASE_PATH))}: the private Redis its \`npm start\` recorded (${describeTarget(redis)}) is unreachable (${unreachable}); start it with \`npm start\`, or set REDIS_URL to the connector's Redis`,
      );
    }
    const variable = redisVariable(redis);
    throw new ConfigError(
      `${variable} ${describeTarget(redis)} is unreachable (${unreachable}): start Redis or check ${variable}`,
    );
  }
  const ctx = createCore({
    config,
    logger: createLogger(
      config.env.LOG_LEVEL === "info" ? "warn" : config.env.LOG_LEVEL,
      // Written before the call returns: the command's one closing line must come after its logs.
      pino.destination({ dest: 2, sync: true }),
    ),
    redis,
    prefix: config.env.REDIS_PREFIX,
  });
  let lost = false;
  try {
    // The database first, as the commands that use it alone do (`withStore`): one that is down
    // or says no is named with DATABASE_URL, its cause and the fix, not by its socket's error.
    await waitForDatabase(ctx.db, { logger: pino({ level: "silent" }), giveUpAfterMs: ANSWER_MS });
    await Promise.race([
      ctx.ready(),
      new Promise((_, reject) =>
        setTimeout(
          () =>
            reject(
              new ConfigError(
                `the connector's Redis or database did not answer within ${ANSWER_MS / 1000} s`,
              ),
            ),
          ANSWER_MS,
        ).unref(),
      ),
    ]);
    // Past its start, a command is bounded the same way: a Redis or Postgres that stops
    // answering (stopped, killed, cut off) ends it with one line within ANSWER_MS, where its
    // connections would otherwise wait for ever.
    const heartbeats = [redisHeartbeat(ctx.redis, redis), databaseHeartbeat(ctx.db)];
    return await whileAnswering(
      action(ctx),
      heartbeats.filter((h) => h !== null),
      { boundMs: ANSWER_MS },
    );
  } catch (error) {
    const failed = redisLost(error, redis) ?? error;
    lost = failed instanceof ServiceLostError;
    throw failed;
  } finally {
    if (lost) {
      // The commands still waiting fail now ("Connection is closed") instead of never.
      for (const connection of [ctx.redis, ctx.ingestRedis, ctx.jobRedis]) connection.disconnect();
    }
    // After a loss the close is not waited for: the CLI ends once the line is out.
    await closeWithin(ctx.close(), lost ? 0 : ANSWER_MS);
    await tracing?.shutdown().catch(() => {});
  }
}

/** A close that a lost server would hold for ever: waited for at most `ms`. */
export async function closeWithin(closing: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    closing.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * The provider a CLI command calls when a shop names none of its own: PROVIDER_BASE_URL (with
 * PROVIDER_AUTH_URL and PROVIDER_AUDIENCE), or outside production the built-in sandbox whose
 * endpoints a running `npm start` wrote beside the database; null when neither.
 */
export function resolveProviderEndpoints(config: RuntimeConfig): ProviderEndpoints | null {
  const { env } = config;
  const provider = configuredProvider(env, "production");
  if (provider) return provider;
  if (env.NODE_ENV === "production") return null;
  const file = sandboxEndpointsFile(env.DATABASE_PATH);
  if (!existsSync(file)) return null;
  const saved = JSON.parse(readFileSync(file, "utf8")) as Partial<ProviderEndpoints>;
  if (!saved.baseUrl || !saved.authUrl || !saved.audience) return null;
  return { baseUrl: saved.baseUrl, authUrl: saved.authUrl, audience: saved.audience };
}

/** The one-line fix when a command needs the provider and none is known. */
export const noProviderError = (config: RuntimeConfig) =>
  new ConfigError(
    `PROVIDER_BASE_URL is not set and no running \`npm start\` sandbox was found (no ${sandboxEndpointsFile(config.env.DATABASE_PATH)}): start the connector with \`npm start\` (it runs the built-in sandbox), or set PROVIDER_BASE_URL, PROVIDER_AUTH_URL and PROVIDER_AUDIENCE`,
  );

const NO_PROVIDER: ProviderEndpoints = { baseUrl: "", authUrl: "", audience: "" };

/**
 * `withContext` and the provider: the shops' provider clients as the web and worker roles build
 * them (the same limiter, token cache and Redis), for the commands that call the provider. Every
 * call they make counts in the store's shared budget. `defaults` is null when neither the
 * environment nor a running `npm start` names a provider (a shop may still name its own).
 */
export async function withProvider<T>(
  config: RuntimeConfig,
  action: (ctx: Connector, defaults: ProviderEndpoints | null) => Promise<T>,
): Promise<T> {
  const defaults = resolveProviderEndpoints(config);
  return withContext(config, (core) => {
    const providers = createProviderClients(core, {
      providerDefaults: defaults ?? NO_PROVIDER,
      providerStaging: configuredProvider(config.env, "staging"),
    });
    return action({ ...core, providers }, defaults);
  });
}

/**
 * The registrations a shop's merchant asks for on the command line: read at bulk priority,
 * waiting up to two minutes a page for the store's budget (a terminal can wait; a page cannot).
 */
export function withRegistrations<T>(
  config: RuntimeConfig,
  action: (reader: RegistrationReader, ctx: Connector) => Promise<T>,
): Promise<T> {
  if (resolveProviderEndpoints(config) === null) throw noProviderError(config);
  return withProvider(config, (ctx) =>
    action(new RegistrationReader(ctx, { maxWaitMs: 120_000 }), ctx),
  );
}

/**
 * The product commands: the provider's clients on the store's limiter (bulk priority, 429s
 * shared), the import record and the importer.
 */
export function withProducts<T>(
  config: RuntimeConfig,
  action: (ctx: Core & { products: ProductsKit }) => Promise<T>,
): Promise<T> {
  return withProvider(config, (ctx, defaults) => {
    const products = createProducts(ctx, ctx.providers, {
      endpointsKnown: (shop) =>
        defaults !== null ||
        (!!shop.providerBaseUrl && !!shop.providerAuthUrl && !!shop.providerAudience),
      noEndpoints: () => noProviderError(config),
    });
    return action({ ...ctx, products });
  });
}
