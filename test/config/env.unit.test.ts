import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { limiterOptions } from "../../src/app/connector.ts";
import { ConfigError, misspeltSettings, parseEnv } from "../../src/config/env.ts";
import { listenerClashes, resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { StoreRateLimiter } from "../../src/engine/limiter/index.ts";

describe("parseEnv", () => {
  it("fills the embedded defaults when nothing is set", () => {
    const env = parseEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.DATABASE_PATH).toBe("./data/connector.sqlite");
    expect(env.PROVIDER_RATE_LIMIT).toBe(100);
    expect(env.PROVIDER_RATE_WINDOW_MS).toBe(60_000);
    expect(env.REDIS_URL).toBeUndefined();
  });

  it("names every bad variable in one error", () => {
    let caught: unknown;
    try {
      parseEnv({
        PORT: "eighty",
        PROVIDER_BASE_URL: "https://api.example.com/v2",
        ENCRYPTION_KEY: "c2hvcnQ=",
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as Error).message;
    expect(message).toContain("PORT");
    expect(message).toContain("PROVIDER_BASE_URL: must end in /v1");
    expect(message).toContain(
      "ENCRYPTION_KEY: must be 32 bytes, base64-encoded (make one with: openssl rand -base64 32)",
    );
  });

  it("says what a numeric variable expects, never zod's `expected number, received NaN`", () => {
    const expected: Record<string, string> = {
      PORT: "must be a whole number from 0 to 65535",
      METRICS_PORT: "must be a whole number from 1 to 65535",
      REDIS_WAIT_MS: "must be a whole number of milliseconds, at least 0",
      DATABASE_POOL_SIZE: "must be a whole number from 1 to 500",
      DATABASE_STATEMENT_TIMEOUT_MS: "must be a whole number of milliseconds, at least 100",
      PROVIDER_RATE_LIMIT: "must be a whole number of requests, at least 1",
      PROVIDER_RATE_WINDOW_MS: "must be a whole number of milliseconds, at least 1",
      PROVIDER_RATE_MARGIN_MS: "must be a whole number of milliseconds, at least 0",
      PROVIDER_TIMEOUT_MS: "must be a whole number of milliseconds, at least 1",
      WEB_PROCESSES: "must be a whole number from 1 to 64",
      WORKER_CONCURRENCY: "must be a whole number, at least 1",
      SYNC_QUEUE_SHARDS: "must be a whole number from 1 to 256",
      WORKER_LOCK_MS: "must be a whole number of milliseconds, at least 1000",
      SYNC_ATTEMPTS: "must be a whole number, at least 1",
      SYNC_RETRY_DELAY_MS: "must be a whole number of milliseconds, at least 1",
      WEBHOOK_MAX_BYTES: "must be a whole number of bytes, at least 1",
      REQUEST_BODY_TIMEOUT_MS: "must be a whole number of milliseconds, at least 100",
      REQUEST_BODIES_MAX_BYTES: "must be a whole number of bytes, at least 1",
      RECONCILE_INTERVAL_MS: "must be a whole number of milliseconds, at least 1",
    };
    for (const [name, reason] of Object.entries(expected)) {
      for (const bad of ["eighty", "1.5", "-1", "99999999999999999999"]) {
        let message = "";
        try {
          parseEnv({ [name]: bad });
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message, `${name}=${bad}`).toBe(`invalid environment:\n  ${name}: ${reason}`);
      }
    }
    expect(() => parseEnv({ SHOPIFY_API_VERSION: "latest" })).toThrow(
      "SHOPIFY_API_VERSION: must be a Shopify API version, YYYY-MM (e.g. 2026-10)",
    );
  });

  it("names a provider URL without its token endpoint and audience with the other bad variables", () => {
    let message = "";
    try {
      parseEnv({
        PORT: "eighty",
        PROVIDER_BASE_URL: "https://api.example.com/v1",
        PROVIDER_AUDIENCE: "https://api.example.com",
        PROVIDER_STAGING_BASE_URL: "https://staging.example.com/v1",
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toBe(
      [
        "invalid environment:",
        "  PORT: must be a whole number from 0 to 65535",
        "  PROVIDER_AUTH_URL: required with PROVIDER_BASE_URL",
        "  PROVIDER_STAGING_AUTH_URL, PROVIDER_STAGING_AUDIENCE: required with PROVIDER_STAGING_BASE_URL",
      ].join("\n"),
    );
  });

  it("bounds the bodies arriving at once to 32 MiB unless set, and never below one webhook", () => {
    expect(parseEnv({}).REQUEST_BODIES_MAX_BYTES).toBe(32 * 1024 * 1024);
    expect(parseEnv({ REQUEST_BODIES_MAX_BYTES: "1048576" }).REQUEST_BODIES_MAX_BYTES).toBe(
      1_048_576,
    );
    // Smaller than WEBHOOK_MAX_BYTES, a webhook that large would be answered 503 every time.
    expect(() => parseEnv({ REQUEST_BODIES_MAX_BYTES: "1048575" })).toThrow(
      "invalid environment:\n  REQUEST_BODIES_MAX_BYTES: must be at least WEBHOOK_MAX_BYTES (1048576), or a webhook that large is always answered 503",
    );
    expect(
      parseEnv({ WEBHOOK_MAX_BYTES: "4096", REQUEST_BODIES_MAX_BYTES: "4096" })
        .REQUEST_BODIES_MAX_BYTES,
    ).toBe(4096);
  });

  it("names a METRICS_PORT that is PORT, or the sandbox's PORT + 1, before either listens", () => {
    // Before: "PORT 127.0.0.1:3600 is in use by another program", the program being this one.
    const clashes = (env: Record<string, string>, role: "all" | "web" | "worker" = "all") =>
      listenerClashes(parseEnv(env), role);
    expect(clashes({ PORT: "3600", METRICS_PORT: "3600" })).toEqual([
      "METRICS_PORT: must differ from PORT (3600), where the web process serves /metrics already",
    ]);
    expect(clashes({ PORT: "3600", METRICS_PORT: "3600" }, "web")).toHaveLength(1);
    // A worker serves nothing on PORT.
    expect(clashes({ PORT: "3600", METRICS_PORT: "3600" }, "worker")).toEqual([]);
    expect(clashes({ METRICS_PORT: "3001" }, "worker")).toEqual([
      "METRICS_PORT: 3001 is the built-in provider sandbox's port (PORT + 1); choose another",
    ]);
    // With a provider of its own there is no sandbox: PORT + 1 is free for metrics.
    const provider = {
      PROVIDER_BASE_URL: "https://api.example.com/v1",
      PROVIDER_AUTH_URL: "https://auth.example.com",
      PROVIDER_AUDIENCE: "https://api.example.com",
    };
    expect(clashes({ ...provider, METRICS_PORT: "3001" })).toEqual([]);
    expect(clashes({ PORT: "0", METRICS_PORT: "1" })).toEqual([]);
  });

  it("takes APP_URL as an origin only: a path would be dropped from the URLs built on it", () => {
    const env = parseEnv({ APP_URL: "https://connector.example.com/" });
    // The trailing slash is dropped, so that `${appUrl}/webhooks/shopify` has one.
    expect(resolveRuntimeConfig(env).appUrl).toBe("https://connector.example.com");
    for (const bad of [
      "https://example.com/connector",
      "https://example.com/?x=1",
      "http://localhost:3000/settings",
    ]) {
      expect(() => parseEnv({ APP_URL: bad }), bad).toThrow(
        "APP_URL: must be an origin such as https://connector.example.com, with no path: the connector serves /webhooks/shopify and its pages at the root",
      );
    }
  });

  it("keeps provider event bodies 90 days unless PROVIDER_EVENT_RETENTION_DAYS says otherwise", () => {
    expect(parseEnv({}).PROVIDER_EVENT_RETENTION_DAYS).toBe(90);
    expect(parseEnv({ PROVIDER_EVENT_RETENTION_DAYS: "30" }).PROVIDER_EVENT_RETENTION_DAYS).toBe(
      30,
    );
    for (const [value, reason] of [
      ["0", "must be at least 1 day"],
      ["2.5", "must be a whole number of days"],
      ["ninety", "must be a whole number of days"],
      ["99999", "must be at most 3650 days"],
    ]) {
      expect(() => parseEnv({ PROVIDER_EVENT_RETENTION_DAYS: value })).toThrow(
        `PROVIDER_EVENT_RETENTION_DAYS: ${reason}`,
      );
    }
  });

  it("gives a shutdown 10 s unless SHUTDOWN_TIMEOUT_MS says otherwise, and names a bad value", () => {
    expect(parseEnv({}).SHUTDOWN_TIMEOUT_MS).toBe(10_000);
    expect(parseEnv({ SHUTDOWN_TIMEOUT_MS: "25000" }).SHUTDOWN_TIMEOUT_MS).toBe(25_000);
    for (const [value, reason] of [
      ["ten", "must be a whole number of milliseconds"],
      ["1.5", "must be a whole number of milliseconds"],
      ["0", "must be at least 100 ms"],
      ["99999999", "must be at most 3600000 ms (1 hour)"],
    ]) {
      expect(() => parseEnv({ SHUTDOWN_TIMEOUT_MS: value })).toThrow(
        `SHUTDOWN_TIMEOUT_MS: ${reason}`,
      );
    }
  });

  it("reads TRUST_PROXY as a number of proxies: true is one, false none, 0 to 10 as given", () => {
    const hops = (v?: string) => parseEnv(v === undefined ? {} : { TRUST_PROXY: v }).TRUST_PROXY;
    expect([hops(), hops("false"), hops("0"), hops("true"), hops("1"), hops("2")]).toEqual([
      0, 0, 0, 1, 1, 2,
    ]);
    for (const bad of ["yes", "-1", "11", "1.5"]) {
      expect(() => hops(bad), bad).toThrow(
        /TRUST_PROXY: must be true, false or the number of proxies in front \(0 to 10\)/,
      );
    }
  });

  it("accepts a 32-byte base64 key and treats empty strings as unset", () => {
    const key = Buffer.alloc(32, 7).toString("base64");
    const env = parseEnv({ ENCRYPTION_KEY: key, REDIS_URL: "" });
    expect(env.ENCRYPTION_KEY).toBe(key);
    expect(env.REDIS_URL).toBeUndefined();
  });

  it("takes REDIS_URL as a redis:// or rediss:// URL with a database number or none", () => {
    for (const url of [
      "redis://127.0.0.1:6379",
      "redis://:s%40cret@redis.internal:6379/",
      "rediss://app:pw@redis.internal:6380/2",
    ]) {
      expect(parseEnv({ REDIS_URL: url }).REDIS_URL).toBe(url);
    }
    // Before: ioredis took another scheme as a socket path ("unreachable (ENOENT)", forever)
    // and a path that is not a number as a SELECT that crashed the process.
    for (const url of ["http://redis.internal:6379", "redis.internal:6379", "redis://"]) {
      expect(() => parseEnv({ REDIS_URL: url }), url).toThrow(
        "REDIS_URL: must be a redis:// URL, redis://[:PASSWORD@]host:port[/DB] (rediss:// for TLS)",
      );
    }
    expect(() => parseEnv({ REDIS_URL: "redis://:hunter2@redis.internal:6379/queues" })).toThrow(
      "REDIS_URL: its path /queues is not a database number; give one, redis://host:port/0, or none",
    );
    try {
      parseEnv({ REDIS_URL: "http://:hunter2@redis.internal:6379" });
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
  });

  it("takes the provider's and Shopify's URLs as http(s) only", () => {
    // Before: any scheme, and undici's "invalid protocol" at the first call.
    for (const [name, url] of [
      ["PROVIDER_BASE_URL", "ftp://api.provider.example/v1"],
      ["PROVIDER_AUTH_URL", "mailto:auth@provider.example"],
      ["SHOPIFY_ADMIN_URL", "ws://127.0.0.1:4000"],
    ] as const) {
      expect(() => parseEnv({ [name]: url }), name).toThrow(
        `${name}: must be an http:// or https:// URL`,
      );
    }
  });

  it("takes DATABASE_URL's sslmode only as one node-postgres knows", () => {
    for (const mode of ["disable", "no-verify", "prefer", "require", "verify-ca", "verify-full"]) {
      const url = `postgres://app:pw@db:5432/connector?sslmode=${mode}&application_name=c`;
      expect(parseEnv({ DATABASE_URL: url }).DATABASE_URL).toBe(url);
    }
    // Before: node-postgres took the typo as TLS with the certificate checked, and said nothing.
    expect(() =>
      parseEnv({ DATABASE_URL: "postgres://app:hunter2@db:5432/connector?sslmode=requir" }),
    ).toThrow(
      "DATABASE_URL: sslmode=requir is not one node-postgres knows; use one of disable, no-verify, prefer, require, verify-ca, verify-full",
    );
  });

  it("reads REDIS_CLUSTER_NODES as seed nodes, with the first entry's credentials", () => {
    expect(
      parseEnv({ REDIS_CLUSTER_NODES: "10.0.0.1:7000, 10.0.0.2:7001" }).REDIS_CLUSTER_NODES,
    ).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
      ],
      tls: false,
    });
    expect(
      parseEnv({
        REDIS_CLUSTER_NODES: "rediss://app:s%40cret@redis-0.internal:6380,redis-1.internal:6380",
      }).REDIS_CLUSTER_NODES,
    ).toEqual({
      nodes: [
        { host: "redis-0.internal", port: 6380 },
        { host: "redis-1.internal", port: 6380 },
      ],
      username: "app",
      password: "s@cret",
      tls: true,
    });
  });

  it("names a cluster entry that is not host:port without printing its password, and refuses both Redis variables", () => {
    expect(() =>
      parseEnv({ REDIS_CLUSTER_NODES: "10.0.0.1:7000,redis://u:hunter2@nowhere" }),
    ).toThrow(/REDIS_CLUSTER_NODES: entry 2 "redis:\/\/\*\*\*@nowhere" is not host:port/);
    try {
      parseEnv({ REDIS_CLUSTER_NODES: "redis://u:hunter2@nowhere" });
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
    expect(() =>
      parseEnv({ REDIS_URL: "redis://127.0.0.1:6379", REDIS_CLUSTER_NODES: "127.0.0.1:7000" }),
    ).toThrow(/REDIS_URL, REDIS_CLUSTER_NODES: set one of them, not both/);
  });

  it("reads LIMITER_PACE_BULK and LIMITER_LIVE_SLOW_START into the limiter it builds, on unless set false", () => {
    // Never connected: the limiter only defines its scripts on it.
    const redis = new Redis({ lazyConnect: true });
    const built = (source: Record<string, string>) =>
      new StoreRateLimiter(redis, limiterOptions(parseEnv(source), "t"));
    try {
      expect(built({})).toMatchObject({ paceBulk: true, liveSlowStart: true });
      expect(built({ LIMITER_PACE_BULK: "false" })).toMatchObject({
        paceBulk: false,
        liveSlowStart: true,
      });
      expect(built({ LIMITER_LIVE_SLOW_START: "false" })).toMatchObject({
        paceBulk: true,
        liveSlowStart: false,
      });
      expect(
        built({
          LIMITER_PACE_BULK: "true",
          LIMITER_LIVE_SLOW_START: "true",
          PROVIDER_RATE_LIMIT: "7",
        }),
      ).toMatchObject({ limit: 7, paceBulk: true, liveSlowStart: true });
    } finally {
      redis.disconnect();
    }
    // Strictly "true" or "false": a typo must not turn a policy off (or on) unnoticed.
    for (const name of ["LIMITER_PACE_BULK", "LIMITER_LIVE_SLOW_START"]) {
      for (const bad of ["TRUE", "False", "1", "0", "yes", "off"]) {
        expect(() => parseEnv({ [name]: bad }), `${name}=${bad}`).toThrow(
          `${name}: must be true or false`,
        );
      }
    }
  });
});

describe("misspeltSettings", () => {
  it("names a variable in another case, or one or two edits from a long setting, with the setting meant", () => {
    expect(
      misspeltSettings({
        WORKER_CONCURENCY: "64",
        SYNC_QUEUE_SHARD: "3",
        PROVIDER_BASE_ULR: "https://api.provider.example/v1",
        redis_url: "redis://redis:6379",
        LOGLEVEL: "debug",
        port: "8080",
      }),
    ).toEqual([
      { name: "WORKER_CONCURENCY", meant: "WORKER_CONCURRENCY" },
      { name: "SYNC_QUEUE_SHARD", meant: "SYNC_QUEUE_SHARDS" },
      { name: "PROVIDER_BASE_ULR", meant: "PROVIDER_BASE_URL" },
      { name: "redis_url", meant: "REDIS_URL" },
      { name: "LOGLEVEL", meant: "LOG_LEVEL" },
      { name: "port", meant: "PORT" },
    ]);
  });

  it("leaves alone the settings, empty values, OTEL_* and what a container or a shell sets", () => {
    expect(
      misspeltSettings({
        REDIS_URL: "redis://redis:6379",
        WORKER_CONCURRENCY: "64",
        SYNC_QUEUE_SHARD: "",
        OTEL_EXPORTER_OTLP_ENDPIONT: "http://collector:4318",
        // Kubernetes' service variables, Docker's and a shell's.
        REDIS_PORT: "tcp://10.0.0.5:6379",
        REDIS_SERVICE_HOST: "10.0.0.5",
        REDIS_PORT_6379_TCP_ADDR: "10.0.0.5",
        KUBERNETES_SERVICE_HOST: "10.0.0.1",
        REDIS_HOST: "redis",
        REDIS_PASSWORD: "secret",
        POSTGRES_PASSWORD: "secret",
        DATABASE_HOST: "postgres",
        HOSTNAME: "connector-7d9f",
        HOME: "/home/node",
        PATH: "/usr/bin",
        NODE_VERSION: "24.11.0",
        NODE_OPTIONS: "--max-old-space-size=160",
        MALLOC_ARENA_MAX: "2",
        LANG: "C.UTF-8",
        TERM: "xterm",
        USER: "node",
        PWD: "/app",
        TZ: "UTC",
        // Marathon's, one edit from PORT: a short setting is matched in another case only.
        PORT0: "31000",
        PORT_HTTP: "31001",
      }),
    ).toEqual([]);
  });
});
