import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, parseEnv } from "../../src/config/env.ts";
import { productionProblems, resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { connectorEntry } from "../helpers/cli.ts";
import { freePortPair } from "../helpers/ports.ts";
import { processesIn } from "../helpers/processes.ts";

/** What a complete production environment sets; each case below removes or spoils one value. */
const PRODUCTION: Record<string, string> = {
  NODE_ENV: "production",
  APP_URL: "https://connector.example.com",
  REDIS_URL: "redis://redis.internal:6379",
  SHOPIFY_API_KEY: "a1b2c3d4e5f6",
  SHOPIFY_API_SECRET: "shpss_0123456789abcdef",
  ENCRYPTION_KEY: Buffer.alloc(32, 9).toString("base64"),
  PROVIDER_BASE_URL: "https://api.provider.example/v1",
  PROVIDER_AUTH_URL: "https://auth.provider.example",
  PROVIDER_AUDIENCE: "https://api.provider.example",
  METRICS_TOKEN: "metrics-token-0123456789",
};

function refusal(env: Record<string, string>): string {
  try {
    resolveRuntimeConfig(parseEnv(env));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("the environment was accepted");
}

describe("NODE_ENV=production", () => {
  it("accepts a complete environment and binds every interface for the container", () => {
    expect(productionProblems(parseEnv(PRODUCTION))).toEqual([]);
    const config = resolveRuntimeConfig(parseEnv(PRODUCTION));
    expect(config.devDefaults).toEqual([]);
    expect(config.host).toBe("0.0.0.0");
  });

  it("names every missing variable on a line of its own, with no sandbox to fall back on", () => {
    const message = refusal({ NODE_ENV: "production" });
    const lines = message.split("\n").slice(1);
    for (const name of [
      "PROVIDER_BASE_URL",
      "PROVIDER_AUTH_URL",
      "PROVIDER_AUDIENCE",
      "REDIS_URL",
      "APP_URL",
      "METRICS_TOKEN",
      "SHOPIFY_API_KEY",
      "SHOPIFY_API_SECRET",
      "ENCRYPTION_KEY",
    ]) {
      expect(lines.filter((line) => line.trim().startsWith(`${name}:`))).toHaveLength(1);
    }
    expect(message).toMatch(
      /PROVIDER_BASE_URL: required in production \(there is no built-in provider sandbox/,
    );
  });

  it("takes REDIS_CLUSTER_NODES in place of REDIS_URL", () => {
    const { REDIS_URL: _, ...withoutUrl } = PRODUCTION;
    expect(
      productionProblems(parseEnv({ ...withoutUrl, REDIS_CLUSTER_NODES: "10.0.0.1:7000" })),
    ).toEqual([]);
    expect(refusal(withoutUrl)).toMatch(
      /REDIS_URL: required in production, or REDIS_CLUSTER_NODES/,
    );
  });

  it("refuses the development secrets even when they are set explicitly", () => {
    const devKey = resolveRuntimeConfig(parseEnv({})).encryptionKey;
    const message = refusal({
      ...PRODUCTION,
      ENCRYPTION_KEY: devKey,
      SHOPIFY_API_SECRET: "dev-shopify-api-secret",
    });
    expect(message).toMatch(/ENCRYPTION_KEY: a development value is set/);
    expect(message).toMatch(/SHOPIFY_API_SECRET: a development value is set/);
  });

  it("refuses the stand-in Shopify and a plain-http APP_URL", () => {
    const message = refusal({
      ...PRODUCTION,
      SHOPIFY_ADMIN_URL: "http://127.0.0.1:4000",
      APP_URL: "http://connector.example.com",
    });
    expect(message).toMatch(/SHOPIFY_ADMIN_URL: must be unset in production/);
    expect(message).toMatch(/APP_URL: must be an https URL/);
  });

  it("refuses a provider reached over plain http, unless on this machine", () => {
    // Before: the client secret went to the token endpoint in clear text, and the token with
    // every API call.
    const message = refusal({
      ...PRODUCTION,
      PROVIDER_AUTH_URL: "http://auth.provider.example",
      PROVIDER_STAGING_BASE_URL: "http://staging.provider.example/v1",
      PROVIDER_STAGING_AUTH_URL: "https://auth.staging.provider.example",
      PROVIDER_STAGING_AUDIENCE: "https://staging.provider.example",
    });
    expect(message.split("\n").slice(1)).toEqual([
      "  PROVIDER_AUTH_URL: must be an https URL in production (the provider's client secret and tokens cross it), or one on this machine (127.0.0.1)",
      "  PROVIDER_STAGING_BASE_URL: must be an https URL in production (the provider's client secret and tokens cross it), or one on this machine (127.0.0.1)",
    ]);
    // A proxy on this machine that carries the calls out over TLS.
    for (const host of ["127.0.0.1:8443", "localhost:8443", "[::1]:8443"]) {
      const local = {
        ...PRODUCTION,
        PROVIDER_BASE_URL: `http://${host}/v1`,
        PROVIDER_AUTH_URL: `http://${host}`,
      };
      expect(productionProblems(parseEnv(local)), host).toEqual([]);
    }
  });
});

describe("development defaults", () => {
  it("listen on loopback only, and refuse a public HOST while a development secret is in use", () => {
    expect(resolveRuntimeConfig(parseEnv({})).host).toBe("127.0.0.1");
    expect(refusal({ HOST: "0.0.0.0" })).toMatch(
      /HOST: 0.0.0.0 is reachable from other machines, but SHOPIFY_API_KEY, SHOPIFY_API_SECRET, ENCRYPTION_KEY use a development default/,
    );
    const ownSecrets = {
      HOST: "0.0.0.0",
      SHOPIFY_API_KEY: "k",
      SHOPIFY_API_SECRET: "s",
      ENCRYPTION_KEY: Buffer.alloc(32, 3).toString("base64"),
    };
    expect(resolveRuntimeConfig(parseEnv(ownSecrets)).host).toBe("0.0.0.0");
  });
});

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs `src/main.ts` until it exits or `until` sees its output; returns what it printed. */
function runMain(env: Record<string, string>, until?: (out: string) => boolean) {
  const child = spawn(process.execPath, connectorEntry(), {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let stopping = false;
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const collect = (chunk: Buffer) => {
      out += chunk.toString();
      if (!stopping && until?.(out)) {
        stopping = true;
        child.kill("SIGTERM");
      }
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("exit", (code) => resolve({ code, out }));
  });
}

/** The local addresses a process listens on for `port`, from the kernel's socket table. */
function listeners(port: number): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(`:${hex}`) && f[3] === "0A")
    .map((f) => {
      const ip = (f[1] ?? "").split(":")[0] ?? "";
      return (ip.match(/../g) ?? [])
        .reverse()
        .map((b) => Number.parseInt(b, 16))
        .join(".");
    });
}

describe("the process", () => {
  it("stopped while it starts, stops its private redis-server too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dev-stop-"));
    dirs.push(dir);
    const port = await freePortPair();
    const data = join(dir, "data");
    // Signalled as soon as its Redis runs: the web and worker roles are not up yet.
    const { code, out } = await runMain(
      {
        PORT: String(port),
        DATABASE_PATH: join(data, "connector.sqlite"),
        LOG_LEVEL: "info",
        // Misspelt: the start says so, once, at warn, and goes on.
        sync_queue_shard: "3",
      },
      (text) => text.includes("started a private redis-server"),
    );
    expect(out).toContain("started a private redis-server");
    expect(
      out.split("\n").filter((line) => line.includes("sync_queue_shard is not a setting")),
    ).toEqual([expect.stringContaining('"meant":"SYNC_QUEUE_SHARDS"')]);
    expect(code).toBe(0);
    expect(processesIn(join(data, "redis")).map((p) => `${p.pid} ${p.command}`)).toEqual([]);
  });

  it("in production, exits 2 before it starts anything: no redis-server, no sandbox, no demo shop", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prod-mode-"));
    dirs.push(dir);
    const { code, out } = await runMain({
      NODE_ENV: "production",
      DATABASE_PATH: join(dir, "data", "connector.sqlite"),
    });
    expect(code).toBe(2);
    expect(out).toMatch(/^invalid environment for NODE_ENV=production:/);
    expect(out).toContain("PROVIDER_BASE_URL: required in production");
    expect(out).not.toMatch(/at .*\.ts:\d+/); // no stack trace
    // Nothing was created: no database, no Redis directory, nothing listening.
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it("in production, names the misspelt variable beside the setting it refuses as missing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prod-typo-"));
    dirs.push(dir);
    const { PROVIDER_BASE_URL: _meant, ...rest } = PRODUCTION;
    const { code, out } = await runMain({
      ...rest,
      PROVIDER_BASE_ULR: "https://api.provider.example/v1",
      DATABASE_PATH: join(dir, "data", "connector.sqlite"),
    });
    expect(code).toBe(2);
    expect(out).toContain("PROVIDER_BASE_URL: required in production");
    expect(out).toContain(
      "PROVIDER_BASE_ULR is not a setting, so nothing reads it: did you mean PROVIDER_BASE_URL?",
    );
    expect(out).not.toMatch(/at .*\.ts:\d+/);
  });

  it("in production, refuses traces asked for with no collector named, before it starts anything", async () => {
    const dir = mkdtempSync(join(tmpdir(), "prod-otel-"));
    dirs.push(dir);
    const { code, out } = await runMain({
      ...PRODUCTION,
      DATABASE_PATH: join(dir, "data", "connector.sqlite"),
      OTEL_TRACES_EXPORTER: "otlp",
    });
    expect(code).toBe(2);
    expect(out).toContain(
      "OTEL_EXPORTER_OTLP_ENDPOINT: required with OTEL_TRACES_EXPORTER=otlp in production",
    );
    expect(out).not.toMatch(/at .*\.ts:\d+/);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it("with development defaults, listens on 127.0.0.1 only and keeps its data directory private", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dev-mode-"));
    dirs.push(dir);
    const port = await freePortPair();
    const data = join(dir, "data");
    let seen: string[] = [];
    const { out } = await runMain(
      { PORT: String(port), DATABASE_PATH: join(data, "connector.sqlite"), LOG_LEVEL: "info" },
      (text) => {
        if (!text.includes("web process listening")) return false;
        seen = listeners(port);
        return true;
      },
    );
    expect(out).toContain("web process listening");
    expect(seen).toEqual(["127.0.0.1"]);
    // Stopped right after it listens, before its workers may be up: nothing left running.
    expect(processesIn(join(data, "redis")).map((p) => `${p.pid} ${p.command}`)).toEqual([]);
    expect(statSync(data).mode & 0o777).toBe(0o700);
    expect(statSync(join(data, "connector.sqlite")).mode & 0o777).toBe(0o600);
    expect(statSync(join(data, "redis")).mode & 0o777).toBe(0o700);
    for (const file of readdirSync(data).filter((f) => f.startsWith("connector.sqlite"))) {
      expect(statSync(join(data, file)).mode & 0o077).toBe(0);
    }
  });
});
