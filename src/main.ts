import { parseArgs } from "node:util";
import type { Logger } from "pino";
import { createConnector } from "./app/connector.ts";
import { DEMO_SHOP, registerDemoShop, resolveServices, Started } from "./app/development.ts";
import { databaseTarget } from "./app/infrastructure.ts";
import {
  ConfigError,
  type Env,
  invalidEnvironment,
  misspeltLine,
  misspeltSettings,
  parseEnv,
} from "./config/env.ts";
import { listenerClashes, resolveRuntimeConfig } from "./config/runtime-config.ts";
import { flushCompileCache } from "./lib/compile-cache.ts";
import { createLogger } from "./lib/logger.ts";
import { createSecretBox, type SecretBox } from "./lib/secret-box.ts";
import { startTracing } from "./lib/tracing.ts";
import { ConnectorMetrics, startMetricsServer } from "./metrics/index.ts";
import { sealedSecretsProblem } from "./ops/index.ts";
import { isWebPrimary, shareMetricsWithPrimary, startWebPrimary } from "./server/web-cluster.ts";
import { openDatabase, ShopRepository, waitForDatabase } from "./store/index.ts";

/** What this process started (a private redis-server, the sandbox, the instance lock). */
const started = new Started();
/** Whether the misspelt settings were logged already (a refusal after that repeats none). */
let typosSaid = false;

/**
 * `npm start`: web and workers in one process with embedded defaults (a private redis-server
 * when REDIS_URL is unset, the provider sandbox when PROVIDER_BASE_URL is unset, SQLite under
 * ./data). `--role web` or `--role worker` runs one half, as docker-compose does.
 */
async function main() {
  const { values } = parseArgs({ options: { role: { type: "string", default: "all" } } });
  const role = values.role;
  if (role !== "all" && role !== "web" && role !== "worker") {
    throw new ConfigError(`--role must be all, web or worker (got ${role})`);
  }

  const env = parseEnv();
  const config = resolveRuntimeConfig(env);
  const logger = createLogger(env.LOG_LEVEL);
  for (const typo of misspeltSettings()) logger.warn(typo, misspeltLine(typo));
  typosSaid = true;
  // Traces only when the OTEL_* variables name an OTLP endpoint (docs/configuration.md).
  const tracing = await startTracing(process.env, { production: env.NODE_ENV === "production" });
  if (tracing) logger.info({ endpoint: tracing.endpoint }, "exporting traces over OTLP");
  // Before anything is started: a key that cannot open the stored secrets stops the process
  // with the fix, instead of every sync retrying on values it cannot open. A Postgres that is
  // not up yet is waited for as Redis is: the web role gives up after REDIS_WAIT_MS.
  await checkStoredSecrets(
    env,
    createSecretBox(config.encryptionKey, config.previousEncryptionKeys),
    { logger, ...(role === "worker" ? {} : { giveUpAfterMs: env.REDIS_WAIT_MS }) },
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
      env.REDIS_URL || env.REDIS_CLUSTER_NODES ? null : "REDIS_URL or REDIS_CLUSTER_NODES",
      env.PROVIDER_BASE_URL ? null : "PROVIDER_BASE_URL",
    ].filter((m): m is string => m !== null);
    if (missing.length > 0) {
      throw invalidEnvironment([
        `WEB_PROCESSES: ${webProcesses} web processes need ${missing.join(", ")}`,
      ]);
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
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, "shutting down the web processes");
      shutdownDeadline(env.SHUTDOWN_TIMEOUT_MS, logger, () => "the web processes to exit");
      await primary.stop();
      process.exit(0);
    };
    for (const signal of STOP_SIGNALS) process.on(signal, () => void stop(signal));
    return;
  }

  const metrics = new ConnectorMetrics({
    defaultMetrics: true,
    storeSeries: env.METRICS_STORE_SERIES,
  });
  shareMetricsWithPrimary(metrics.registry);
  // First, so a port in use stops the process before anything else was started. The worker
  // role serves no HTTP otherwise; in the other roles this is a second listener. In a web
  // cluster the primary serves it, summed over the web processes.
  const clashes = listenerClashes(env, role);
  if (clashes.length > 0) throw invalidEnvironment(clashes);
  const metricsServer =
    env.METRICS_PORT && webProcesses === 1
      ? await startMetricsServer(metrics, {
          port: env.METRICS_PORT,
          host: config.host,
          token: env.METRICS_TOKEN,
        })
      : undefined;

  // From here on a signal stops what was started so far. Until the roles are up, its default
  // action would end this process at once and leave the private redis-server running.
  // SIGHUP: the terminal that ran `npm start` was closed. `on`, not `once`: a second signal (npm
  // and the wrapper pass theirs on, the terminal signals the whole group) must not end the
  // process by default halfway through its shutdown. A web process of a cluster can get both the
  // terminal's SIGINT and its primary's SIGTERM: the first one counts.
  let shuttingDown = false;
  let shutdown = async (signal: string): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, "shutting down while starting");
    shutdownDeadline(
      env.SHUTDOWN_TIMEOUT_MS,
      logger,
      () => started.stopping ?? "the services started so far to stop",
    );
    await started.stop();
    process.exit(0);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => void shutdown(signal));

  const services = await resolveServices(env, { logger, role, started });
  const connector = createConnector({
    config,
    logger,
    redis: services.redis,
    providerDefaults: services.provider,
    providerStaging: services.providerStaging,
    prefix: env.REDIS_PREFIX,
    metrics,
  });
  await connector.ready();
  if (services.sandbox) await registerDemoShop(connector);

  const closers: { close: () => Promise<void>; what: string }[] = [];
  let listening: string | undefined;
  if (role !== "worker") {
    const { startWebRole } = await import("./app/web.ts");
    const web = await startWebRole(connector);
    listening = web.url;
    closers.push({ close: () => web.close(), what: "the web server to close" });
  }
  if (role !== "web") {
    const { startWorkerRole } = await import("./app/worker.ts");
    const workers = await startWorkerRole(connector);
    // Workers first: running backfills save their cursor before the web process goes.
    closers.unshift({ close: () => workers.close(), what: "the workers to stop" });
  }

  if (metricsServer) {
    const server = metricsServer;
    logger.info({ port: env.METRICS_PORT }, "metrics listening");
    closers.push({
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
      what: "the metrics server to close",
    });
  }

  shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, "shutting down");
    let waitingFor = "";
    shutdownDeadline(env.SHUTDOWN_TIMEOUT_MS, logger, () => started.stopping ?? waitingFor);
    for (const { close, what } of closers) {
      waitingFor = what;
      await close();
    }
    waitingFor = "the connections to Redis and the database to close";
    await connector.close();
    // The sandbox, the private redis-server and the instance lock, last started first stopped.
    await started.stop();
    // What was recorded until now goes out before the process does.
    await tracing?.shutdown().catch(() => {});
    process.exit(0);
  };

  // One line for whoever started it: where it is, and what to try next.
  const roles = role === "all" ? "web and workers" : role === "web" ? "web" : "workers";
  const next = services.sandbox
    ? `try: npx connector webhook send --topic orders/create --shop ${DEMO_SHOP} --file examples/orders-create.json`
    : listening
      ? `health: ${listening}/readyz; status: npx connector status`
      : "status: npx connector status";
  logger.info(
    { ...(listening ? { url: listening } : {}), role },
    `connector ready (${roles}${listening ? ` on ${listening}` : ""}); ${next}`,
  );
  flushCompileCache();
}

const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * A shutdown not done within `ms` ends here: one line naming what it still waits for, the
 * children this process started told to stop (SIGTERM), and exit code 1.
 */
function shutdownDeadline(ms: number, logger: Logger, waitingFor: () => string): void {
  setTimeout(() => {
    logger.error(
      { shutdownTimeoutMs: ms, waitingFor: waitingFor() },
      `shutdown did not finish within SHUTDOWN_TIMEOUT_MS (${ms} ms): still waiting for ${waitingFor()}; exiting`,
    );
    started.abandon();
    process.exit(1);
  }, ms);
}

async function checkStoredSecrets(
  env: Env,
  secrets: SecretBox,
  wait: { logger: Logger; giveUpAfterMs?: number },
): Promise<void> {
  const db = openDatabase(databaseTarget(env), { poolSize: 1 });
  try {
    await waitForDatabase(db, wait);
    const problem = await sealedSecretsProblem(new ShopRepository(db), secrets);
    if (problem) throw new ConfigError(problem);
  } finally {
    await db.close();
  }
}

main().catch(async (error: unknown) => {
  await started.stop();
  if (error instanceof ConfigError) {
    console.error(error.message);
    // A setting that is missing or wrong is often one misspelt next to it.
    if (!typosSaid) for (const typo of misspeltSettings()) console.error(misspeltLine(typo));
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
