import { distance } from "fastest-levenshtein";
import { z } from "zod";

/**
 * The environment, parsed once at start-up (docs/principles.md: configuration is parsed once). Nothing else reads process.env.
 * A bad value stops the process with a message naming the variable.
 */
const base64Key32 = z
  .string()
  .refine(
    (v) => Buffer.from(v, "base64").length === 32,
    "must be 32 bytes, base64-encoded (make one with: openssl rand -base64 32)",
  );

/** An http(s) URL: zod's z.url() alone takes any scheme (ftp:, mailto:), which undici cannot call. */
const httpUrl = z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" });
const optionalUrl = httpUrl.optional();
/** A provider API's base URL (PROVIDER_BASE_URL, PROVIDER_STAGING_BASE_URL). */
const providerApiUrl = httpUrl.refine((v) => /\/v1\/?$/.test(v), "must end in /v1").optional();

/** The sslmode values node-postgres reads from DATABASE_URL (src/store/database.ts). */
const SSL_MODES = ["disable", "no-verify", "prefer", "require", "verify-ca", "verify-full"];

/** DATABASE_URL's sslmode parameter as given, or null when it has none. */
export function sslModeOf(url: string): string | null {
  try {
    return new URL(url).searchParams.get("sslmode");
  } catch {
    return null;
  }
}

/**
 * REDIS_URL: `redis://[[USER]:PASSWORD@]host[:port][/db]`, `rediss://` for TLS. ioredis takes
 * anything: another scheme as a socket path (`unreachable (ENOENT)`, forever), a database that
 * is not a number as a SELECT that fails outside any command (a crash with a stack trace).
 */
const redisUrl = z.string().check((ctx) => {
  let url: URL | undefined;
  try {
    url = new URL(ctx.value);
  } catch {}
  if (!url || !/^rediss?:$/.test(url.protocol) || !url.hostname) {
    ctx.issues.push({
      code: "custom",
      input: ctx.value,
      message: "must be a redis:// URL, redis://[:PASSWORD@]host:port[/DB] (rediss:// for TLS)",
    });
  } else if (!/^\/?(\d{1,5})?$/.test(url.pathname)) {
    ctx.issues.push({
      code: "custom",
      input: ctx.value,
      message: `its path ${url.pathname} is not a database number; give one, redis://host:port/0, or none`,
    });
  }
});

/** A Redis Cluster to connect to: its seed nodes, and the credentials every node shares. */
export interface RedisClusterTarget {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * REDIS_CLUSTER_NODES: `host:port,host:port,…`, or `redis://[user:password@]host:port` entries
 * (`rediss://` for TLS) when the nodes need credentials; every node shares the first entry's.
 */
const redisClusterNodes = z.string().transform((value, ctx): RedisClusterTarget => {
  const target: RedisClusterTarget = { nodes: [], tls: false };
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const [index, entry] of entries.entries()) {
    let url: URL;
    try {
      url = new URL(/^rediss?:\/\//.test(entry) ? entry : `redis://${entry}`);
    } catch {
      url = new URL("redis://invalid");
    }
    const port = Number(url.port);
    if (url.hostname === "invalid" || !url.hostname || !Number.isInteger(port) || port < 1) {
      ctx.addIssue({
        code: "custom",
        message: `entry ${index + 1} "${entry.replace(/\/\/[^@]*@/, "//***@")}" is not host:port`,
      });
      continue;
    }
    target.nodes.push({ host: url.hostname, port });
    if (index === 0) {
      if (url.username) target.username = decodeURIComponent(url.username);
      if (url.password) target.password = decodeURIComponent(url.password);
      target.tls = url.protocol === "rediss:";
    }
  }
  if (entries.length === 0) ctx.addIssue({ code: "custom", message: "no host:port given" });
  return target;
});

/** "true" or "false", exactly: a typo stops the process rather than turning a policy off. */
const strictBoolean = z.stringbool({
  truthy: ["true"],
  falsy: ["false"],
  case: "sensitive",
  error: "must be true or false",
});

const PROXY_HOPS = "must be true, false or the number of proxies in front (0 to 10)";

/**
 * A whole number read from its text, within bounds, with one message that says what is
 * expected: zod's own ("expected number, received NaN", "Too small") names neither the unit nor
 * the range.
 */
function wholeNumber(bounds: { min: number; max?: number; unit?: string }) {
  const { min, max, unit } = bounds;
  const what = `must be a whole number${unit ? ` of ${unit}` : ""}`;
  const message = max === undefined ? `${what}, at least ${min}` : `${what} from ${min} to ${max}`;
  const atLeast = z.coerce.number({ message }).int(message).min(min, message);
  return max === undefined ? atLeast : atLeast.max(max, message);
}
const MS = "milliseconds";

export const EnvSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  PORT: wholeNumber({ min: 0, max: 65535 }).default(3000),
  /**
   * The interface every HTTP listener binds. Default: 0.0.0.0 in production (a container's
   * port mapping needs it), 127.0.0.1 otherwise; development defaults refuse anything else.
   */
  HOST: z.string().min(1).optional(),
  /**
   * Where Shopify and browsers reach the connector: an origin, as the connector serves its
   * routes (/webhooks/shopify, /shopify/install, /settings) at the root of it.
   */
  APP_URL: z
    .url()
    .refine((v) => {
      const url = new URL(v);
      return url.pathname === "/" && !url.search && !url.hash;
    }, "must be an origin such as https://connector.example.com, with no path: the connector serves /webhooks/shopify and its pages at the root")
    .optional(),
  REDIS_URL: redisUrl.optional(),
  /**
   * A Redis Cluster instead of one Redis (REDIS_URL): seed nodes, `host:port,…`. BullMQ's keys
   * then share one hash tag (`{REDIS_PREFIX}`), and every other key of one script shares a slot.
   */
  REDIS_CLUSTER_NODES: redisClusterNodes.optional(),
  /**
   * How long the web role waits for an unreachable REDIS_URL at start-up before it exits (its
   * orchestrator restarts it); a worker waits as long as it takes.
   */
  REDIS_WAIT_MS: wholeNumber({ min: 0, unit: MS }).default(60_000),
  /**
   * How long a shutdown (SIGTERM, SIGINT, SIGHUP) may take: one not finished by then logs what it
   * still waits for and exits non-zero. Below Kubernetes' 30 s grace period by default.
   */
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number({ message: "must be a whole number of milliseconds" })
    .int("must be a whole number of milliseconds")
    .min(100, "must be at least 100 ms")
    .max(3_600_000, "must be at most 3600000 ms (1 hour)")
    .default(10_000),
  /** Key prefix of every Redis key (queues, snapshots, limiter), so deployments can share a Redis. */
  REDIS_PREFIX: z
    .string()
    .regex(/^[\w.-]+$/, "letters, digits, '.', '_' or '-' only")
    .default("connector"),
  DATABASE_PATH: z.string().min(1).default("./data/connector.sqlite"),
  /**
   * Postgres as the link store instead of the SQLite file: `postgres://user:password@host/db`.
   * Every process of a deployment (web, workers, the CLI) uses the same database.
   */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/.+/, "must be a postgres:// URL")
    // node-postgres takes any other value as TLS, checked: a typo would not say so.
    .refine((url) => [null, ...SSL_MODES].includes(sslModeOf(url)), {
      error: (issue) =>
        `sslmode=${sslModeOf(String(issue.input))} is not one node-postgres knows; use one of ${SSL_MODES.join(", ")}`,
    })
    .optional(),
  /** Postgres connections per process (each web and worker process has its own pool). */
  DATABASE_POOL_SIZE: wholeNumber({ min: 1, max: 500 }).default(10),
  /** A Postgres statement running longer is cancelled, and the job retried. */
  DATABASE_STATEMENT_TIMEOUT_MS: wholeNumber({ min: 100, unit: MS }).default(10_000),
  SHOPIFY_API_KEY: z.string().min(1).optional(),
  SHOPIFY_API_SECRET: z.string().min(1).optional(),
  SHOPIFY_API_VERSION: z
    .string()
    .regex(/^\d{4}-\d{2}$/, "must be a Shopify API version, YYYY-MM (e.g. 2026-10)")
    .default("2026-10"),
  /**
   * Sends every Shopify Admin API call (GraphQL, OAuth token) to this origin instead of
   * https://{shop}: the stand-in Shopify in tests, benchmarks and `npm start`. Unset in production.
   */
  SHOPIFY_ADMIN_URL: optionalUrl,
  /**
   * Who subscribes the shops to webhooks. `app`: the app-specific subscriptions of
   * shopify.app.toml, deployed with `shopify app deploy` (the default in production); the
   * connector removes its own per-shop duplicates of them. `per-shop`: the connector registers
   * every topic for each shop through Admin GraphQL (the default in development, where the
   * stand-in Shopify has no deployed app configuration).
   */
  SHOPIFY_WEBHOOKS: z.enum(["app", "per-shop"]).optional(),
  ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /**
   * Behind reverse proxies: how many there are in front of the connector, each appending the
   * address it saw to X-Forwarded-For. The client's address (the admin login's per-client limit)
   * is then the entry that many places from the right: the one the outermost trusted proxy
   * added, which the client cannot forge (what it sends itself stands further left). `true` is
   * one proxy, `false` or 0 none (the socket's address).
   */
  TRUST_PROXY: z
    .string()
    .trim()
    .toLowerCase()
    .transform((v) =>
      v === "true" ? 1 : v === "false" ? 0 : /^\d{1,3}$/.test(v) ? Number(v) : Number.NaN,
    )
    .pipe(z.number({ message: PROXY_HOPS }).int(PROXY_HOPS).min(0, PROXY_HOPS).max(10, PROXY_HOPS))
    .default(0),
  ENCRYPTION_KEY: base64Key32.optional(),
  /**
   * Keys that still open what they sealed, while `connector secrets rotate` re-seals it under
   * ENCRYPTION_KEY: comma-separated, base64 like ENCRYPTION_KEY.
   */
  ENCRYPTION_KEY_PREVIOUS: z
    .string()
    .transform((v) =>
      v
        .split(",")
        .map((k) => k.trim())
        .filter(Boolean),
    )
    .pipe(z.array(base64Key32))
    .optional(),
  PROVIDER_BASE_URL: providerApiUrl,
  PROVIDER_AUTH_URL: optionalUrl,
  PROVIDER_AUDIENCE: z.string().min(1).optional(),
  /** The provider's staging environment, offered on the settings page (default: as production). */
  PROVIDER_STAGING_BASE_URL: providerApiUrl,
  PROVIDER_STAGING_AUTH_URL: optionalUrl,
  PROVIDER_STAGING_AUDIENCE: z.string().min(1).optional(),
  PROVIDER_RATE_LIMIT: wholeNumber({ min: 1, unit: "requests" }).default(100),
  PROVIDER_RATE_WINDOW_MS: wholeNumber({ min: 1, unit: MS }).default(60_000),
  /** Added to each limiter slot for clock granularity and unanswered requests; default min(50, window/400). */
  PROVIDER_RATE_MARGIN_MS: wholeNumber({ min: 0, unit: MS }).optional(),
  /**
   * The limiter spreads bulk work's slots (backfill, resync, sweep) evenly over the window
   * instead of granting every free slot at once, so a live order arriving mid-backfill finds a
   * slot and other clients of the store's budget meet no burst. `false`: bulk drains at full rate.
   */
  LIMITER_PACE_BULK: strictBoolean.default(true),
  /**
   * Slow start for live work: while no answer has told the limiter a store's budget, the first
   * live request goes alone and the others wait for its answer, so a burst on an idle store
   * another client shares meets no 429s. `false`: a burst goes out at once.
   */
  LIMITER_LIVE_SLOW_START: strictBoolean.default(true),
  /** How long a provider request may take before it counts as failed (and is retried). */
  PROVIDER_TIMEOUT_MS: wholeNumber({ min: 1, unit: MS }).default(10_000),
  /**
   * `--role web` only: how many processes serve PORT (node:cluster, one per core is the useful
   * most). Each is a whole receiver with its own Redis connections; needs REDIS_URL.
   */
  WEB_PROCESSES: wholeNumber({ min: 1, max: 64 }).default(1),
  WORKER_CONCURRENCY: wholeNumber({ min: 1 }).default(16),
  /**
   * How many queues the sync jobs are spread over, by store (src/queue/sync-shards.ts): each
   * has its own hash tag, so on a Redis Cluster each can sit on its own master. Unset: 1 on one
   * Redis, the number of masters on a cluster.
   */
  SYNC_QUEUE_SHARDS: wholeNumber({ min: 1, max: 256 }).optional(),
  /**
   * A worker's job lock; a worker that dies (kill -9, OOM) leaves its active jobs locked this
   * long before another worker takes them over (BullMQ's stalled-job check runs as often).
   */
  WORKER_LOCK_MS: wholeNumber({ min: 1_000, unit: MS }).default(30_000),
  SYNC_ATTEMPTS: wholeNumber({ min: 1 }).default(12),
  SYNC_RETRY_DELAY_MS: wholeNumber({ min: 1, unit: MS }).default(2_000),
  WEBHOOK_MAX_BYTES: wholeNumber({ min: 1, unit: "bytes" }).default(1_048_576),
  /**
   * How long a request body read before its sender is known (a webhook's, a form's) may take to
   * arrive after the headers: a sender still trickling it then is answered 408 and its connection
   * closed, instead of holding what it sent for Node's 5-minute request timeout.
   */
  REQUEST_BODY_TIMEOUT_MS: wholeNumber({ min: 100, unit: MS }).default(10_000),
  /**
   * What one web process may hold, in all, of the bodies still arriving before their sender is
   * known (src/server/request-body.ts): a body that would take it past this is answered 503 at
   * once and its connection closed. 32 MiB fits the production heap (--max-old-space-size=160)
   * and 32 webhooks of WEBHOOK_MAX_BYTES at once; at least WEBHOOK_MAX_BYTES (parseEnv).
   */
  REQUEST_BODIES_MAX_BYTES: wholeNumber({ min: 1, unit: "bytes" }).default(32 * 1024 * 1024),
  RECONCILE_INTERVAL_MS: wholeNumber({ min: 1, unit: MS }).default(15 * 60_000),
  /**
   * Days a provider event's body (customer data) is kept; older bodies are reduced to their IDs
   * by the maintenance worker, hourly. The rows (topic, times, outcome) stay.
   */
  PROVIDER_EVENT_RETENTION_DAYS: z.coerce
    .number({ message: "must be a whole number of days" })
    .int("must be a whole number of days")
    .min(1, "must be at least 1 day")
    .max(3650, "must be at most 3650 days (10 years)")
    .default(90),
  /** When set, the process also serves /metrics and /healthz on this port (worker processes). */
  METRICS_PORT: wholeNumber({ min: 1, max: 65535 }).optional(),
  /** When set, /metrics requires `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  /** How many provider stores get their own `store` label in /metrics; the rest are `other`. */
  METRICS_STORE_SERIES: z.coerce
    .number({ message: "must be a whole number" })
    .int("must be a whole number")
    .min(0, "must be 0 (no per-store series) or more")
    .default(500),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});
export type Env = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment; throws a ConfigError listing every bad variable by name. */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  const cleaned = Object.fromEntries(
    Object.entries(source).filter(([, value]) => value !== undefined && value !== ""),
  );
  const result = EnvSchema.safeParse(cleaned);
  // A value can fail several checks with one message (a huge number: not a safe integer, and
  // above the maximum); each line is said once.
  const problems = [
    ...new Set([
      ...(result.success ? [] : result.error.issues).map(
        (issue) => `${issue.path.join(".")}: ${issue.message}`,
      ),
      ...combinationProblems(cleaned),
      ...(result.success ? boundProblems(result.data) : []),
    ]),
  ];
  if (result.success && problems.length === 0) return result.data;
  throw invalidEnvironment(problems);
}

/**
 * Variables set in the environment that look like a misspelt setting (`WORKER_CONCURENCY`,
 * `redis_url`), each with the setting meant: nothing reads them, so the setting keeps its
 * default without a word. A name is taken for a setting when it is one in another case, or one
 * or two edits from a setting of 8 characters or more: a short one (PORT, HOST) is one edit from
 * what platforms set for themselves (Marathon's PORT0). The standard OTEL_* variables are the
 * OpenTelemetry specification's, left alone.
 */
export function misspeltSettings(
  source: Record<string, string | undefined> = process.env,
): { name: string; meant: string }[] {
  const known = Object.keys(EnvSchema.shape);
  const found: { name: string; meant: string }[] = [];
  for (const [name, value] of Object.entries(source)) {
    if (!value || name.length < 4 || name.startsWith("OTEL_") || known.includes(name)) continue;
    const upper = name.toUpperCase();
    let meant: string | undefined;
    let nearest = Number.POSITIVE_INFINITY;
    for (const setting of known) {
      const edits = distance(upper, setting);
      if (edits <= (setting.length < 8 ? 0 : 2) && edits < nearest) {
        meant = setting;
        nearest = edits;
      }
    }
    if (meant) found.push({ name, meant });
  }
  return found;
}

/** The line an operator reads for a misspelt setting. */
export function misspeltLine({ name, meant }: { name: string; meant: string }): string {
  return `${name} is not a setting, so nothing reads it: did you mean ${meant}? (docs/configuration.md lists them)`;
}

/** The error for settings that will not do: one indented line per problem, each naming its variable. */
export function invalidEnvironment(problems: string[], context = ""): ConfigError {
  return new ConfigError(
    `invalid environment${context}:\n${problems.map((p) => `  ${p}`).join("\n")}`,
  );
}

/**
 * Variables that only work together, read from the text as given (so they are named with every
 * other bad variable, before anything starts): a provider's API needs its token endpoint and
 * audience, and one Redis is either REDIS_URL or a cluster.
 */
function combinationProblems(set: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const [base, ...needs] of Object.values(PROVIDER_VARIABLES)) {
    const missing = needs.filter((name) => set[name] === undefined);
    if (set[base] !== undefined && missing.length > 0) {
      problems.push(`${missing.join(", ")}: required with ${base}`);
    }
  }
  if (set.REDIS_URL !== undefined && set.REDIS_CLUSTER_NODES !== undefined) {
    problems.push("REDIS_URL, REDIS_CLUSTER_NODES: set one of them, not both");
  }
  return problems;
}

/**
 * Numbers that bound one another, read once each is valid: a budget of arriving bodies smaller
 * than one webhook would answer every webhook that large 503, for good.
 */
function boundProblems(env: Env): string[] {
  if (env.REQUEST_BODIES_MAX_BYTES >= env.WEBHOOK_MAX_BYTES) return [];
  return [
    `REQUEST_BODIES_MAX_BYTES: must be at least WEBHOOK_MAX_BYTES (${env.WEBHOOK_MAX_BYTES}), or a webhook that large is always answered 503`,
  ];
}

/** Where a provider environment's API and tokens are: its URL, token endpoint and audience. */
export interface ProviderEndpoints {
  baseUrl: string;
  authUrl: string;
  audience: string;
}

/** Each provider environment's variables: its API's base URL, token endpoint and audience. */
export const PROVIDER_VARIABLES = {
  production: ["PROVIDER_BASE_URL", "PROVIDER_AUTH_URL", "PROVIDER_AUDIENCE"],
  staging: ["PROVIDER_STAGING_BASE_URL", "PROVIDER_STAGING_AUTH_URL", "PROVIDER_STAGING_AUDIENCE"],
} as const;

/**
 * The provider environment the variables name (PROVIDER_BASE_URL, PROVIDER_AUTH_URL,
 * PROVIDER_AUDIENCE, or their PROVIDER_STAGING_ twins), or undefined when its base URL is unset.
 * parseEnv has already refused a base URL without the other two.
 */
export function configuredProvider(
  env: Env,
  environment: keyof typeof PROVIDER_VARIABLES,
): ProviderEndpoints | undefined {
  const [baseUrl, authUrl, audience] = PROVIDER_VARIABLES[environment].map((name) => env[name]);
  if (!baseUrl) return undefined;
  if (!authUrl || !audience) {
    throw invalidEnvironment(combinationProblems(env));
  }
  return { baseUrl, authUrl, audience };
}
