import { createHash } from "node:crypto";
import { isIP } from "node:net";
import { dirname, join } from "node:path";
import { type Env, invalidEnvironment, PROVIDER_VARIABLES } from "./env.ts";

/**
 * The environment resolved into what the processes need, with the embedded defaults that make
 * `npm start` work on a fresh machine. In production (NODE_ENV=production, the one switch) no
 * development default ever runs: not the fallback secrets, not the built-in provider sandbox,
 * not the private redis-server, not the stand-in Shopify.
 */
export interface RuntimeConfig {
  env: Env;
  appUrl: string;
  /** The interface the HTTP listeners bind: HOST, else 0.0.0.0 in production, 127.0.0.1 otherwise. */
  host: string;
  shopifyApiKey: string;
  /** Who subscribes shops to webhooks (SHOPIFY_WEBHOOKS). */
  webhookRegistration: "app" | "per-shop";
  shopifyApiSecret: string;
  encryptionKey: string;
  /** ENCRYPTION_KEY_PREVIOUS: keys that still open what they sealed (rotation). */
  previousEncryptionKeys: string[];
  /** Names of the values that fell back to development defaults, for a start-up warning. */
  devDefaults: string[];
}

const DEV_SHOPIFY_KEY = "dev-shopify-api-key";
const DEV_SHOPIFY_SECRET = "dev-shopify-api-secret";
/** A fixed development key: data sealed with it is only as secret as this repository. */
const DEV_ENCRYPTION_KEY = createHash("sha256")
  .update("order-sync-connector development key")
  .digest("base64");

/** Values this repository prints: a deployment that sets one of them has no secret at all. */
const PUBLIC_SECRET_VALUES: Partial<Record<keyof Env, readonly string[]>> = {
  SHOPIFY_API_KEY: [DEV_SHOPIFY_KEY],
  SHOPIFY_API_SECRET: [DEV_SHOPIFY_SECRET],
  ENCRYPTION_KEY: [DEV_ENCRYPTION_KEY],
};

const PRODUCTION_REQUIRED: readonly [keyof Env, string][] = [
  ["PROVIDER_BASE_URL", "there is no built-in provider sandbox in production"],
  ["PROVIDER_AUTH_URL", "the provider's OAuth token endpoint"],
  ["PROVIDER_AUDIENCE", "the provider's token audience"],
  ["APP_URL", "the public https URL Shopify calls"],
  ["METRICS_TOKEN", "/metrics is not served without a token in production"],
];

/** Every reason the environment is unfit for production, one line per variable. */
export function productionProblems(env: Env): string[] {
  const problems: string[] = [];
  for (const [name, why] of PRODUCTION_REQUIRED) {
    if (env[name] === undefined) problems.push(`${name}: required in production (${why})`);
  }
  if (!env.REDIS_URL && !env.REDIS_CLUSTER_NODES) {
    problems.push(
      "REDIS_URL: required in production, or REDIS_CLUSTER_NODES (production runs no private redis-server)",
    );
  }
  for (const name of ["SHOPIFY_API_KEY", "SHOPIFY_API_SECRET", "ENCRYPTION_KEY"] as const) {
    if (env[name] === undefined) problems.push(`${name}: required in production`);
  }
  for (const [name, values] of Object.entries(PUBLIC_SECRET_VALUES)) {
    const value = env[name as keyof Env];
    if (typeof value === "string" && values?.includes(value)) {
      problems.push(`${name}: a development value is set; generate a secret of your own`);
    }
  }
  if (env.APP_URL && !env.APP_URL.startsWith("https://")) {
    problems.push("APP_URL: must be an https URL in production (Shopify calls it)");
  }
  // The client secret goes to the token endpoint, and the token with every API call: each
  // environment's API and token URLs (not its audience, a name that is never called).
  for (const name of Object.values(PROVIDER_VARIABLES).flatMap((names) => names.slice(0, 2))) {
    const value = env[name];
    if (value && !value.startsWith("https://") && !isLoopback(new URL(value).hostname)) {
      problems.push(
        `${name}: must be an https URL in production (the provider's client secret and tokens cross it), or one on this machine (127.0.0.1)`,
      );
    }
  }
  if (env.SHOPIFY_ADMIN_URL) {
    problems.push(
      "SHOPIFY_ADMIN_URL: must be unset in production (it sends Admin API calls to a stand-in)",
    );
  }
  return problems;
}

/** The built-in provider sandbox's own SQLite file, beside the connector's database. */
export function sandboxStatePath(databasePath: string): string {
  return join(dirname(databasePath), "sandbox.sqlite");
}

/** Whether `host` (a HOST setting, or a URL's hostname: IPv6 in brackets) is this machine. */
function isLoopback(host: string): boolean {
  if (host === "localhost" || host === "[::1]") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

export function resolveRuntimeConfig(env: Env): RuntimeConfig {
  if (env.NODE_ENV === "production") {
    const problems = productionProblems(env);
    if (problems.length > 0) {
      throw invalidEnvironment(problems, " for NODE_ENV=production");
    }
  }
  const devDefaults: string[] = [];
  const pick = (name: keyof Env, value: string | undefined, fallback: string) => {
    if (value !== undefined) return value;
    devDefaults.push(name);
    return fallback;
  };
  const host = env.HOST ?? (env.NODE_ENV === "production" ? "0.0.0.0" : "127.0.0.1");
  const config: RuntimeConfig = {
    env,
    // An origin (parseEnv refuses a path): without the trailing slash URL parsing adds, so
    // that `${appUrl}/webhooks/shopify` has one slash.
    appUrl: env.APP_URL ? new URL(env.APP_URL).origin : `http://localhost:${env.PORT}`,
    host,
    shopifyApiKey: pick("SHOPIFY_API_KEY", env.SHOPIFY_API_KEY, DEV_SHOPIFY_KEY),
    shopifyApiSecret: pick("SHOPIFY_API_SECRET", env.SHOPIFY_API_SECRET, DEV_SHOPIFY_SECRET),
    encryptionKey: pick("ENCRYPTION_KEY", env.ENCRYPTION_KEY, DEV_ENCRYPTION_KEY),
    previousEncryptionKeys: env.ENCRYPTION_KEY_PREVIOUS ?? [],
    webhookRegistration:
      env.SHOPIFY_WEBHOOKS ?? (env.NODE_ENV === "production" ? "app" : "per-shop"),
    devDefaults,
  };
  // Development secrets are public: a process that uses them answers on loopback only.
  if (devDefaults.length > 0 && !isLoopback(host)) {
    throw invalidEnvironment([
      `HOST: ${host} is reachable from other machines, but ${devDefaults.join(", ")} ${devDefaults.length > 1 ? "use" : "uses"} a development default; set ${devDefaults.length > 1 ? "them" : "it"} or listen on 127.0.0.1`,
    ]);
  }
  return config;
}

/**
 * This process's own listeners on one port (METRICS_PORT as PORT, or as the built-in sandbox's
 * PORT + 1): the second to listen would find the port taken, by this very process, and say that
 * "another program" holds it. One line per clash; none for a worker's METRICS_PORT on PORT, as
 * the worker role serves nothing else.
 */
export function listenerClashes(env: Env, role: "all" | "web" | "worker"): string[] {
  const { PORT: port, METRICS_PORT: metricsPort } = env;
  if (metricsPort === undefined || port === 0) return [];
  if (role !== "worker" && metricsPort === port) {
    return [
      `METRICS_PORT: must differ from PORT (${port}), where the web process serves /metrics already`,
    ];
  }
  const sandbox = !env.PROVIDER_BASE_URL && env.NODE_ENV !== "production";
  if (sandbox && metricsPort === port + 1) {
    return [
      `METRICS_PORT: ${metricsPort} is the built-in provider sandbox's port (PORT + 1); choose another`,
    ];
  }
  return [];
}
