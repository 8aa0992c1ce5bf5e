import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { EnvSchema, parseEnv } from "../../src/config/env.ts";
import { productionProblems } from "../../src/config/runtime-config.ts";

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(
  readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8"),
  // Docker Compose applies YAML merge keys (`<<: *connector-env`).
  { merge: true },
) as {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
};

describe("docker-compose.yml", () => {
  it("runs redis with AOF on (fsync always) and noeviction, as BullMQ requires", () => {
    const command = compose.services.redis?.command?.join(" ") ?? "";
    expect(command).toMatch(/--appendonly yes/);
    // What RELIABILITY.md measured: only `always` keeps every webhook answered 200.
    expect(command).toMatch(/--appendfsync always/);
    expect(command).toMatch(/--maxmemory-policy noeviction/);
  });

  it("runs a web and a worker process against that redis, sharing a SQLite volume", () => {
    const { web, worker } = compose.services;
    expect(web?.command).toContain("web");
    expect(worker?.command).toContain("worker");
    for (const service of [web, worker]) {
      expect(service?.environment?.REDIS_URL).toBe("redis://redis:6379");
      expect(service?.environment?.DATABASE_PATH).toMatch(/^\/data\//);
      expect(service?.volumes).toContain("sqlite-data:/data");
      expect(service?.depends_on?.redis?.condition).toBe("service_healthy");
    }
    expect(Object.keys(compose.volumes)).toEqual(
      expect.arrayContaining(["sqlite-data", "redis-data"]),
    );
  });
});

describe("docker-compose.yml, the scale profile", () => {
  it("adds Postgres only with --profile scale, and lets the workers run as several replicas", () => {
    const services = compose.services as Record<
      string,
      ComposeService & {
        profiles?: string[];
        deploy?: { replicas?: string };
        depends_on?: Record<string, { condition: string; required?: boolean }>;
      }
    >;
    expect(services.postgres?.profiles).toEqual(["scale"]);
    expect(services.web?.profiles).toBeUndefined();
    for (const role of ["web", "worker"]) {
      // Waits for Postgres when the profile runs it, and starts without it otherwise.
      expect(services[role]?.depends_on?.postgres).toEqual({
        condition: "service_healthy",
        required: false,
      });
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Compose's interpolation syntax
      expect(services[role]?.environment?.DATABASE_URL).toBe("${DATABASE_URL:-}");
    }
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Compose's interpolation syntax
    expect(services.worker?.deploy?.replicas).toBe("${WORKER_REPLICAS:-1}");
    expect(Object.keys(compose.volumes)).toContain("postgres-data");
  });
});

describe("docker-compose.yml, the production settings", () => {
  const raw = readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8");
  const { web, worker } = compose.services as Record<
    string,
    ComposeService & { healthcheck?: { test: string[] } }
  >;

  it("passes every setting the connector reads to both roles, except the stand-in Shopify's", () => {
    const settings = Object.keys(EnvSchema.shape).filter(
      // SHOPIFY_ADMIN_URL: production refuses it (Admin API calls to the stand-in Shopify).
      // REDIS_CLUSTER_NODES: this file runs its own Redis, and REDIS_URL and a cluster exclude
      // each other.
      (name) => name !== "SHOPIFY_ADMIN_URL" && name !== "REDIS_CLUSTER_NODES",
    );
    for (const service of [web, worker]) {
      const passed = Object.keys(service?.environment ?? {});
      const missing = settings.filter(
        (name) => !passed.includes(name) && !(name === "METRICS_PORT" && service === web),
      );
      expect(missing).toEqual([]);
      expect(service?.environment?.NODE_ENV).toBe("production");
      expect(service?.environment?.SHOPIFY_ADMIN_URL).toBeUndefined();
    }
  });

  it("requires the provider and secret variables instead of defaulting them to empty", () => {
    for (const name of [
      "PROVIDER_BASE_URL",
      "PROVIDER_AUTH_URL",
      "PROVIDER_AUDIENCE",
      "SHOPIFY_API_KEY",
      "SHOPIFY_API_SECRET",
      "ENCRYPTION_KEY",
      "APP_URL",
      "METRICS_TOKEN",
    ]) {
      expect(raw).toMatch(new RegExp(`${name}: \\$\\{${name}:\\?[^}]+\\}`));
    }
  });

  it("checks the web role's readiness and the worker's health", () => {
    expect(web?.healthcheck?.test.join(" ")).toContain("/readyz");
    expect(worker?.healthcheck?.test.join(" ")).toContain(
      `${worker?.environment?.METRICS_PORT}/healthz`,
    );
  });

  it("gives the production environment it declares everything production requires", () => {
    const env = Object.fromEntries(
      Object.entries(web?.environment ?? {}).map(([name, value]) => [
        name,
        // ${NAME:?…} stands for the operator's value; ${NAME:-default} for the default.
        String(value)
          .replace(
            /^\$\{\w+:\?.*\}$/,
            name === "ENCRYPTION_KEY"
              ? Buffer.alloc(32, 1).toString("base64")
              : name === "APP_URL"
                ? "https://connector.example.com"
                : name.endsWith("_URL")
                  ? "https://provider.example.com/v1"
                  : `operator-value-for-${name}`,
          )
          .replace(/^\$\{\w+:-(.*)\}$/, "$1"),
      ]),
    );
    expect(productionProblems(parseEnv(env))).toEqual([]);
  });
});
