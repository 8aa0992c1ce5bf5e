import { dirname, join } from "node:path";
import type { Logger } from "pino";
import type { Env } from "../config/env.ts";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { watchRedis } from "../lib/redis-wait.ts";
import { createSecretBox, type SecretBox } from "../lib/secret-box.ts";
import { ConnectorMetrics } from "../metrics/index.ts";
import { createRedis, type RedisTarget } from "../queue/connection.ts";
import { type Db, openDatabase } from "../store/index.ts";

/** The process's connections and process-wide services; nothing domain-specific. */
export interface Infrastructure {
  config: RuntimeConfig;
  logger: Logger;
  /** Key prefix of every Redis key (BullMQ's and ours). */
  prefix: string;
  /** For BullMQ and everything that may wait out a Redis restart. */
  redis: RedisConnection;
  /** For the webhook receiver: fails fast so it can answer 503. */
  ingestRedis: RedisConnection;
  /**
   * The sync jobs' own commands (limiter scripts, snapshot and token reads): sixteen concurrent
   * jobs issue them in the same event-loop turns, so they share socket writes (BENCHMARKS.md).
   */
  jobRedis: RedisConnection;
  db: Db;
  secrets: SecretBox;
  /** This process's Prometheus metrics (served at /metrics). */
  metrics: ConnectorMetrics;
  /** Resolves once every Redis connection is up (the ingest one never queues offline). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export interface InfrastructureOptions {
  config: RuntimeConfig;
  logger: Logger;
  /** A `redis://` URL, or a Redis Cluster's seed nodes (REDIS_CLUSTER_NODES). */
  redis: RedisTarget;
  prefix?: string | undefined;
  /** The process's metrics; a fresh registry when omitted. */
  metrics?: ConnectorMetrics | undefined;
}

/**
 * Where `npm start` writes the URL of the private redis-server it started (next to the
 * database), so the CLI can reach the same Redis without REDIS_URL.
 */
export const redisUrlFile = (databasePath: string) =>
  join(dirname(databasePath), "redis", "redis.url");

/**
 * Where `npm start` writes the endpoints of the built-in provider sandbox it started (next to
 * the database), so the CLI's provider commands reach the same sandbox without PROVIDER_BASE_URL.
 * Development only: production requires PROVIDER_BASE_URL and starts no sandbox.
 */
export const sandboxEndpointsFile = (databasePath: string) =>
  join(dirname(databasePath), "provider-sandbox.json");

/** Where the links are: DATABASE_URL (Postgres) when set, else the SQLite file. */
export const databaseTarget = (env: Env) => env.DATABASE_URL ?? env.DATABASE_PATH;

export function openInfrastructure(options: InfrastructureOptions): Infrastructure {
  const { config, logger } = options;
  // First: a database path the connector cannot use throws here, before a Redis connection
  // is open that would keep a failed command's process alive.
  const db = openDatabase(databaseTarget(config.env), {
    poolSize: config.env.DATABASE_POOL_SIZE,
    statementTimeoutMs: config.env.DATABASE_STATEMENT_TIMEOUT_MS,
    logger,
  });
  const redis = createRedis(options.redis, "worker", "connector");
  const ingestRedis = createRedis(options.redis, "ingest", "connector-ingest");
  const jobRedis = createRedis(options.redis, "pipelined", "connector-jobs");
  const connections = [redis, ingestRedis, jobRedis];
  watchRedis(redis, options.redis, logger);
  return {
    config,
    logger,
    prefix: options.prefix ?? "connector",
    redis,
    ingestRedis,
    jobRedis,
    db,
    secrets: createSecretBox(config.encryptionKey, config.previousEncryptionKeys),
    metrics:
      options.metrics ?? new ConnectorMetrics({ storeSeries: config.env.METRICS_STORE_SERIES }),
    async ready() {
      await db.ready();
      await Promise.all(
        connections.map((r) =>
          r.status === "ready"
            ? undefined
            : new Promise<void>((resolve) => r.once("ready", () => resolve())),
        ),
      );
    },
    async close() {
      for (const connection of connections) connection.disconnect();
      await db.close();
    },
  };
}
