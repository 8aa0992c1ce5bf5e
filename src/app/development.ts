import { rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Logger } from "pino";
import { ConfigError, configuredProvider, type Env } from "../config/env.ts";
import { sandboxStatePath } from "../config/runtime-config.ts";
import type { ProviderEndpoints } from "../engine/provider-clients.ts";
import { loadDevTool } from "../lib/dev-tools.ts";
import { acquireInstanceLock } from "../lib/instance-lock.ts";
import { ensurePrivateDir } from "../lib/private-files.ts";
import { forgetRedis, recordRedis, stopLeftoverRedis } from "../lib/private-redis.ts";
import type { RedisTarget } from "../lib/redis-keys.ts";
import { startRedisServer } from "../lib/redis-server.ts";
import { waitForRedis } from "../lib/redis-wait.ts";
import { sealedFor } from "../lib/secret-box.ts";
import type { Connector } from "./connector.ts";
import { redisUrlFile, sandboxEndpointsFile } from "./infrastructure.ts";

/** The demo shop `npm start` registers against the sandbox, so the first sync needs no setup. */
export const DEMO_SHOP = "demo-shop.myshopify.com";
const SANDBOX_CLIENT = { clientId: "sandbox-client", clientSecret: "sandbox-secret" };
/** The secret the built-in sandbox signs its webhooks (claims, registrations) with. */
const SANDBOX_WEBHOOK_SECRET = "sandbox-webhook-secret-for-development";

/** What was started and must be stopped, last started first (see {@link Started.stop}). */
export class Started {
  readonly #stops: { stop: () => Promise<void> | void; what: string; atExit?: () => void }[] = [];
  #current: string | undefined;

  /**
   * `what` names it while it stops ("the private redis-server to stop"), for the shutdown
   * deadline; `atExit`, synchronous, is what still happens if the process exits before `stop`.
   */
  add(stop: () => Promise<void> | void, what: string, atExit?: () => void): void {
    this.#stops.push({ stop, what, ...(atExit ? { atExit } : {}) });
  }

  /** What {@link stop} is waiting for right now, if anything. */
  get stopping(): string | undefined {
    return this.#current;
  }

  /** Stops everything, best effort: a failed start never leaves a child process behind. */
  async stop(): Promise<void> {
    for (const entry of [...this.#stops].reverse()) {
      this.#current = entry.what;
      try {
        await entry.stop();
      } catch {
        // Stopping is best effort; the start-up error is what the operator reads.
      }
      this.#stops.splice(this.#stops.indexOf(entry), 1);
    }
    this.#current = undefined;
  }

  /**
   * For a shutdown past its deadline, just before the process exits: what was not stopped yet
   * gets its `atExit` (a child process is sent SIGTERM, a file of this process removed), with no
   * waiting.
   */
  abandon(): void {
    for (const entry of this.#stops.splice(0).reverse()) {
      try {
        entry.atExit?.();
      } catch {
        // best effort, the process is exiting
      }
    }
  }
}

/** The Redis and provider a process runs against, and whether the sandbox stands in. */
export interface Services {
  redis: RedisTarget;
  provider: ProviderEndpoints;
  providerStaging?: ProviderEndpoints;
  sandbox: boolean;
}

/**
 * The services a process uses: the configured ones, or on a developer's machine the embedded
 * ones `npm start` brings (a private redis-server when REDIS_URL is unset, the provider sandbox
 * when PROVIDER_BASE_URL is unset; production refuses both in config/). Whatever is started is
 * added to `started`.
 */
export async function resolveServices(
  env: Env,
  options: { logger: Logger; role: "all" | "web" | "worker"; started: Started },
): Promise<Services> {
  const { logger, role, started } = options;
  // This process owns the data directory's private Redis and sandbox file: one at a time.
  const configured = env.REDIS_CLUSTER_NODES ?? env.REDIS_URL;
  if (!configured || !env.PROVIDER_BASE_URL) {
    const dataDir = dirname(resolve(env.DATABASE_PATH));
    ensurePrivateDir(dataDir);
    const release = acquireInstanceLock(resolve(dataDir, "connector.pid"), dataDir);
    started.add(release, "connector.pid", release);
  }

  let redis: RedisTarget;
  if (configured) {
    redis = configured;
    // The web role gives up after REDIS_WAIT_MS (its orchestrator restarts it); a worker waits.
    await waitForRedis(redis, {
      logger,
      ...(role === "worker" ? {} : { giveUpAfterMs: env.REDIS_WAIT_MS }),
    });
  } else {
    // Next to the database, with AOF on, so queued work survives a restart of `npm start`.
    const dir = resolve(dirname(env.DATABASE_PATH), "redis");
    ensurePrivateDir(dir);
    // Never two servers on one directory: one left by a start that was killed goes first.
    await stopLeftoverRedis(dir, { urlFile: redisUrlFile(env.DATABASE_PATH), logger });
    const redisServer = await startRedisServer({
      appendonly: true,
      appendfsync: "always",
      dir,
      owned: true,
      onSpawn: (pid, port) => recordRedis(dir, { pid, port }),
    });
    const pid = redisServer.process.pid as number;
    started.add(
      async () => {
        await redisServer.stop();
        forgetRedis(dir, pid);
      },
      `the private redis-server (PID ${pid}) to stop`,
      // Its record stays: the next start finds the server if it is still there.
      () => redisServer.process.kill("SIGTERM"),
    );
    redis = redisServer.url;
    // The CLI (`connector dlq`, `connector status`) finds this Redis through the file.
    writeFileSync(redisUrlFile(env.DATABASE_PATH), redis, { mode: 0o600 });
    started.add(() => rmSync(redisUrlFile(env.DATABASE_PATH), { force: true }), "redis.url");
    logger.info(
      { url: redis },
      "started a private redis-server (set REDIS_URL or REDIS_CLUSTER_NODES to use your own)",
    );
  }

  const staging = configuredProvider(env, "staging");
  const providerSet = configuredProvider(env, "production");
  if (providerSet) {
    return {
      redis,
      provider: providerSet,
      ...(staging ? { providerStaging: staging } : {}),
      sandbox: false,
    };
  }
  const { startSandbox } = await loadDevTool(
    "the built-in provider sandbox",
    () => import("@connector/provider-sandbox"),
  );
  const sandboxPort = env.PORT === 0 ? 0 : env.PORT + 1;
  const sandbox = await startSandbox({
    port: sandboxPort,
    stores: [1001, 1002],
    rateLimit: env.PROVIDER_RATE_LIMIT,
    windowMs: env.PROVIDER_RATE_WINDOW_MS,
    seedRegistrations: 25,
    ...SANDBOX_CLIENT,
    // Its events (claims, registrations) go to this connector, signed as the demo shop expects;
    // its control API (/_sandbox/claims, /_sandbox/registrations…) sends them on request.
    control: true,
    webhooks: {
      url: new URL("/webhooks/provider", env.APP_URL ?? `http://localhost:${env.PORT}`).toString(),
      secret: SANDBOX_WEBHOOK_SECRET,
    },
    // Beside the database: a restart continues with the same orders and IDs.
    statePath: sandboxStatePath(env.DATABASE_PATH),
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EADDRINUSE") throw error;
    throw new ConfigError(
      `the built-in provider sandbox's port ${sandboxPort} (PORT + 1) is in use by another program: stop it, or set PORT to another port`,
    );
  });
  started.add(() => sandbox.close(), "the built-in provider sandbox to close");
  const provider = { baseUrl: sandbox.url, authUrl: sandbox.authUrl, audience: sandbox.audience };
  // The CLI's provider commands (registrations, products) find the sandbox through it, as they
  // find Redis.
  writeFileSync(sandboxEndpointsFile(env.DATABASE_PATH), JSON.stringify(provider), { mode: 0o600 });
  const removeEndpoints = () => rmSync(sandboxEndpointsFile(env.DATABASE_PATH), { force: true });
  started.add(removeEndpoints, "provider-sandbox.json", removeEndpoints);
  logger.info({ url: sandbox.url }, "no PROVIDER_BASE_URL: using the built-in provider sandbox");
  return {
    redis,
    provider,
    ...(staging ? { providerStaging: staging } : {}),
    sandbox: true,
  };
}

/**
 * Against the sandbox, the demo shop is registered once, so a first webhook syncs; and the
 * sandbox account's webhook secret is stored, so the sandbox's events are accepted.
 */
export async function registerDemoShop(connector: Connector): Promise<boolean> {
  const account = {
    providerBaseUrl: connector.providers.endpoints("production").baseUrl,
    clientId: SANDBOX_CLIENT.clientId,
  };
  if (!(await connector.webhookSecrets.get(account))) {
    await connector.webhookSecrets.set(
      account,
      connector.secrets.seal(
        SANDBOX_WEBHOOK_SECRET,
        sealedFor.providerWebhookSecret(account.providerBaseUrl, account.clientId),
      ),
    );
  }
  if (await connector.shops.getShop(DEMO_SHOP)) return false;
  await connector.shops.upsertShop(DEMO_SHOP, {
    storeId: 1001,
    providerEnvironment: "sandbox",
    providerClientId: SANDBOX_CLIENT.clientId,
    providerClientSecretSealed: connector.secrets.seal(
      SANDBOX_CLIENT.clientSecret,
      sealedFor.providerClientSecret(DEMO_SHOP),
    ),
    storeCurrency: "USD",
    shopCurrency: "USD",
    locationMap: { "48752903": 1 },
    defaultLocationId: 1,
    installedAt: new Date().toISOString(),
  });
  connector.logger.info({ shop: DEMO_SHOP }, "registered the demo shop against the sandbox");
  return true;
}
