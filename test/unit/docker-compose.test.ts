import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(
  readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8"),
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
