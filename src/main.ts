import { rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Worker } from "bullmq";
import { createConnector, type ProviderEndpoints, redisUrlFile } from "./app/connector.ts";
import { ConfigError, parseEnv } from "./config/env.ts";
import { resolveRuntimeConfig, sandboxStatePath } from "./config/runtime-config.ts";
import { loadDevTool } from "./lib/dev-tools.ts";
import { acquireInstanceLock } from "./lib/instance-lock.ts";
import { listen } from "./lib/listen.ts";
import { createLogger } from "./lib/logger.ts";
import { ensurePrivateDir } from "./lib/private-files.ts";
import { startRedisServer } from "./lib/redis-server.ts";
import { waitForRedis } from "./lib/redis-wait.ts";
import { createSecretBox, type SecretBox, sealedFor } from "./lib/secret-box.ts";
import { ConnectorMetrics, startMetricsServer } from "./metrics/index.ts";
import { sealedSecretsProblem } from "./ops/index.ts";
import { createWebApp } from "./server/app.ts";
import {
  isFirstWebProcess,
  isWebPrimary,
  shareMetricsWithPrimary,
  startWebPrimary,
} from "./server/web-cluster.ts";
import { openDatabase, ShopRepository } from "./store/index.ts";
import { startBackfillWorker } from "./workers/backfill-worker.ts";
import { startSweepWorker } from "./workers/sweep-worker.ts";
import { startSyncWorker } from "./workers/sync-worker.ts";

/** The demo shop `npm start` registers against the sandbox, so the first sync needs no setup. */
export const DEMO_SHOP = "demo-shop.myshopify.com";
const SANDBOX_CLIENT = { clientId: "sandbox-client", clientSecret: "sandbox-secret" };

/**
 * `npm start`: web and workers in one process with embedded defaults (a private redis-server
 * when REDIS_URL is unset, the provider sandbox when PROVIDER_BASE_URL is unset, SQLite under
 * ./data). `--role web` or `--role worker` runs one half, as docker-compose does.
 */
/**
 * What was started and must be stopped if start-up fails later (a private redis-server, the
 * sandbox, the instance lock): a failed start never leaves a child process behind.
 */
const startedSoFar: (() => Promise<void> | void)[] = [];

async function stopStarted(): Promise<void> {
  for (const stop of startedSoFar.splice(0).reverse()) {
    try {
      await stop();
    } catch {
      // Stopping is best effort; the start-up error is what the operator reads.
    }
  }
}

async function main() {
  const { values } = parseArgs({ options: { role: { type: "string", default: "all" } } });
  const role = values.role;
  if (!["all", "web", "worker"].includes(role))
    throw new ConfigError(`--role must be all, web or worker (got ${role})`);

  const env = parseEnv();
  const config = resolveRuntimeConfig(env);
  const logger = createLogger(env.LOG_LEVEL);
  // Before anything is started: a key that cannot open the stored secrets stops the process
  // with the fix, instead of every sync retrying on values it cannot open.
  checkStoredSecrets(
    env.DATABASE_PATH,
    createSecretBox(config.encryptionKey, config.previousEncryptionKeys),
  );
  if (config.devDefaults.length > 0) {
    logger.warn(
      { variables: config.devDefaults },
      "using development defaults; set these in production",
    );
  }

  // The worker role ignores WEB_PROCESSES (docker-compose shares one environment); `all` refuses
  // it. Every web process would otherwise start its own private Redis, and the built-in sandbox
  // on a port the processes share: a cluster is for a deployment with its own Redis.
  const webProcesses = role === "worker" ? 1 : env.WEB_PROCESSES;
  if (webProcesses > 1) {
    const missing = [
      role !== "web" ? "--role web" : null,
      env.REDIS_URL ? null : "REDIS_URL",
      env.PROVIDER_BASE_URL ? null : "PROVIDER_BASE_URL",
    ].filter((m): m is string => m !== null);
    if (missing.length > 0) {
      throw new ConfigError(
        `invalid environment:\n  WEB_PROCESSES: ${webProcesses} web processes need ${missing.join(", ")}`,
      );
    }
  }
  if (isWebPrimary(webProcesses)) {
    const primary = await startWebPrimary({
      processes: webProcesses,
      logger,
      ...(env.METRICS_PORT
        ? { metrics: { port: env.METRICS_PORT, host: config.host, token: env.METRICS_TOKEN } }
        : {}),
    });
    const stop = async (signal: string) => {
      logger.info({ signal }, "shutting down the web processes");
      await primary.stop();
      process.exit(0);
    };
    process.once("SIGINT", () => void stop("SIGINT"));
    process.once("SIGTERM", () => void stop("SIGTERM"));
    return;
  }

  const metrics = new ConnectorMetrics({ defaultMetrics: true });
  shareMetricsWithPrimary(metrics.registry);
  // First, so a port in use stops the process before anything else was started. The worker
  // role serves no HTTP otherwise; in the other roles this is a second listener. In a web
  // cluster the primary serves it, summed over the web processes.
  const metricsServer =
    env.METRICS_PORT && webProcesses === 1
      ? await startMetricsServer(metrics, {
          port: env.METRICS_PORT,
          host: config.host,
          token: env.METRICS_TOKEN,
        })
      : undefined;

  // This process owns the data directory's private Redis and sandbox file: one at a time.
  if (!env.REDIS_URL || !env.PROVIDER_BASE_URL) {
    const dataDir = dirname(resolve(env.DATABASE_PATH));
    ensurePrivateDir(dataDir);
    startedSoFar.push(acquireInstanceLock(resolve(dataDir, "connector.pid"), dataDir));
  }

  let redisUrl = env.REDIS_URL;
  if (redisUrl) {
    // The web role gives up after REDIS_WAIT_MS (its orchestrator restarts it); a worker waits.
    await waitForRedis(redisUrl, {
      logger,
      ...(role === "worker" ? {} : { giveUpAfterMs: env.REDIS_WAIT_MS }),
    });
  } else {
    // Next to the database, with AOF on, so queued work survives a restart of `npm start`.
    const dir = resolve(dirname(env.DATABASE_PATH), "redis");
    ensurePrivateDir(dir);
    const redisServer = await startRedisServer({ appendonly: true, appendfsync: "always", dir });
    startedSoFar.push(() => redisServer.stop());
    redisUrl = redisServer.url;
    // The CLI (`connector dlq`, `connector status`) finds this Redis through the file.
    writeFileSync(redisUrlFile(env.DATABASE_PATH), redisUrl, { mode: 0o600 });
    startedSoFar.push(() => rmSync(redisUrlFile(env.DATABASE_PATH), { force: true }));
    logger.info(
      { url: redisUrl },
      "started a private redis-server (set REDIS_URL to use your own)",
    );
  }

  // The development stand-in, loaded only when no provider is configured (never in production).
  let sandbox:
    | { url: string; authUrl: string; audience: string; close(): Promise<void> }
    | undefined;
  let providerDefaults: ProviderEndpoints;
  if (env.PROVIDER_BASE_URL) {
    if (!env.PROVIDER_AUTH_URL || !env.PROVIDER_AUDIENCE) {
      throw new ConfigError(
        "invalid environment:\n  PROVIDER_AUTH_URL, PROVIDER_AUDIENCE: required with PROVIDER_BASE_URL",
      );
    }
    providerDefaults = {
      baseUrl: env.PROVIDER_BASE_URL,
      authUrl: env.PROVIDER_AUTH_URL,
      audience: env.PROVIDER_AUDIENCE,
    };
  } else {
    const { startSandbox } = await loadDevTool(
      "the built-in provider sandbox",
      () => import("@connector/provider-sandbox"),
    );
    const sandboxPort = env.PORT === 0 ? 0 : env.PORT + 1;
    sandbox = await startSandbox({
      port: sandboxPort,
      stores: [1001, 1002],
      rateLimit: env.PROVIDER_RATE_LIMIT,
      windowMs: env.PROVIDER_RATE_WINDOW_MS,
      seedRegistrations: 25,
      ...SANDBOX_CLIENT,
      // Beside the database: a restart continues with the same orders and IDs.
      statePath: sandboxStatePath(env.DATABASE_PATH),
    }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EADDRINUSE") throw error;
      throw new ConfigError(
        `the built-in provider sandbox's port ${sandboxPort} (PORT + 1) is in use by another program: stop it, or set PORT to another port`,
      );
    });
    const startedSandbox = sandbox;
    startedSoFar.push(() => startedSandbox.close());
    providerDefaults = {
      baseUrl: sandbox.url,
      authUrl: sandbox.authUrl,
      audience: sandbox.audience,
    };
    logger.info({ url: sandbox.url }, "no PROVIDER_BASE_URL: using the built-in provider sandbox");
  }

  let providerStaging: ProviderEndpoints | undefined;
  if (env.PROVIDER_STAGING_BASE_URL) {
    if (!env.PROVIDER_STAGING_AUTH_URL || !env.PROVIDER_STAGING_AUDIENCE) {
      throw new ConfigError(
        "invalid environment:\n  PROVIDER_STAGING_AUTH_URL, PROVIDER_STAGING_AUDIENCE: required with PROVIDER_STAGING_BASE_URL",
      );
    }
    providerStaging = {
      baseUrl: env.PROVIDER_STAGING_BASE_URL,
      authUrl: env.PROVIDER_STAGING_AUTH_URL,
      audience: env.PROVIDER_STAGING_AUDIENCE,
    };
  }

  const ctx = createConnector({
    config,
    logger,
    redisUrl,
    providerDefaults,
    ...(providerStaging ? { providerStaging } : {}),
    prefix: env.REDIS_PREFIX,
    metrics,
  });
  await ctx.ready();
  if (sandbox && !ctx.shops.getShop(DEMO_SHOP)) {
    ctx.shops.upsertShop(DEMO_SHOP, {
      storeId: 1001,
      providerEnvironment: "sandbox",
      providerClientId: SANDBOX_CLIENT.clientId,
      providerClientSecretSealed: ctx.secrets.seal(
        SANDBOX_CLIENT.clientSecret,
        sealedFor.providerClientSecret(DEMO_SHOP),
      ),
      storeCurrency: "USD",
      shopCurrency: "USD",
      locationMap: { "48752903": 1 },
      defaultLocationId: 1,
      installedAt: new Date().toISOString(),
    });
    logger.info({ shop: DEMO_SHOP }, "registered the demo shop against the sandbox");
  }

  const closers: (() => Promise<void>)[] = [];
  let listening: string | undefined;
  if (role !== "worker") {
    const web = createWebApp(ctx);
    const { server, port } = await listen(web.app.fetch, {
      port: env.PORT,
      host: config.host,
      what: "PORT",
    });
    listening = `http://${config.host}:${port}`;
    logger.info({ url: config.appUrl, port, pid: process.pid }, "web process listening");
    // Shopify deletes a subscription after repeated failed deliveries (an outage of ours):
    // re-create what is missing and resync the gap, without delaying the start. One web
    // process of a cluster does it.
    if (isFirstWebProcess()) {
      // Shops installed before expiring tokens: exchanged in the background (Shopify refuses
      // non-expiring offline tokens from 2027-01-01).
      void ctx.shopTokens.migrateAll().then((results) => {
        if (results.length > 0) logger.info({ results }, "non-expiring Shopify tokens migrated");
      });
      void ctx.installer.checkAllSubscriptions().then((reports) => {
        const repaired = reports.filter((r) => r.created.length > 0);
        logger.info(
          { shops: reports.length, repaired: repaired.map((r) => r.shop) },
          "webhook subscriptions checked",
        );
      });
    }
    closers.push(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await web.close();
    });
  }
  if (role !== "web") {
    const worker: Worker = startSyncWorker(ctx);
    logger.info({ concurrency: env.WORKER_CONCURRENCY }, "sync worker running");
    closers.push(() => worker.close());
    const backfill = startBackfillWorker(ctx);
    const sweep = await startSweepWorker(ctx);
    logger.info(
      { reconcileIntervalMs: env.RECONCILE_INTERVAL_MS },
      "backfill and reconciliation sweep workers running",
    );
    // Backfills first: they save their cursor and go back to the queue for the next start.
    closers.unshift(
      () => backfill.close(),
      () => sweep.close(),
    );
  }

  if (metricsServer) {
    const server = metricsServer;
    logger.info({ port: env.METRICS_PORT }, "metrics listening");
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }

  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    // A web process of a cluster can get both the terminal's SIGINT and its primary's SIGTERM.
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, "shutting down");
    for (const close of closers) await close();
    await ctx.close();
    // The sandbox, the private redis-server and the instance lock, last started first stopped.
    await stopStarted();
    process.exit(0);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));

  // One line for whoever started it: where it is, and what to try next.
  const roles = role === "all" ? "web and workers" : role === "web" ? "web" : "workers";
  const next = sandbox
    ? `try: npx connector webhook send --topic orders/create --shop ${DEMO_SHOP} --file examples/orders-create.json`
    : listening
      ? `health: ${listening}/readyz; status: npx connector status`
      : "status: npx connector status";
  logger.info(
    { ...(listening ? { url: listening } : {}), role },
    `connector ready (${roles}${listening ? ` on ${listening}` : ""}); ${next}`,
  );
}

function checkStoredSecrets(databasePath: string, secrets: SecretBox): void {
  const db = openDatabase(databasePath);
  try {
    const problem = sealedSecretsProblem(new ShopRepository(db), secrets);
    if (problem) throw new ConfigError(problem);
  } finally {
    db.$client.close();
  }
}

main().catch(async (error: unknown) => {
  await stopStarted();
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  // One line; the stack only when asked for.
  if (process.env.LOG_LEVEL === "debug" || process.env.LOG_LEVEL === "trace") console.error(error);
  else {
    console.error(
      `the connector could not start: ${(error as Error)?.message ?? String(error)} (LOG_LEVEL=debug shows the stack)`,
    );
  }
  process.exit(1);
});
