import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { collectOutput, stopChildren } from "../helpers/child-output.ts";
import { connectorEntry } from "../helpers/cli.ts";
import { service } from "../helpers/services.ts";

/**
 * The web and the worker role as separate OS processes on one Redis, as a deployment runs them:
 * each writes its heartbeat, and the web process's /metrics shows both, so the "worker role with
 * no heartbeat" alert watches a worker that nobody scrapes. The worker's own listener
 * (METRICS_PORT) serves its sync counters.
 */
const dir = mkdtempSync(join(tmpdir(), "role-heartbeats-"));
const children: ChildProcess[] = [];
afterAll(async () => {
  await stopChildren(children);
  rmSync(dir, { recursive: true, force: true });
});

function startRole(role: "web" | "worker", env: Record<string, string>) {
  const child = spawn(process.execPath, connectorEntry("--role", role), {
    env: {
      ...process.env,
      REDIS_URL: service("redisUrl"),
      DATABASE_PATH: join(dir, `${role}.sqlite`),
      SHOPIFY_API_SECRET: "heartbeat-test-secret",
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      PROVIDER_AUTH_URL: "http://127.0.0.1:9",
      PROVIDER_AUDIENCE: "none",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return collectOutput(child);
}

/** The value of one sample of a scrape, or undefined. */
async function sampleAt(url: string, series: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(url)).text();
    const line = text.split("\n").find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : undefined;
  } catch {
    return undefined; // not listening yet
  }
}

describe("role heartbeats", { timeout: 90_000 }, () => {
  it("the web process's /metrics shows the web and the worker role alive", async () => {
    const prefix = `hb-${randomUUID()}`;
    const [webPort, workerMetricsPort] = [await freePort(), await freePort()];
    const started = Date.now() / 1000;
    const web = startRole("web", { REDIS_PREFIX: prefix, PORT: String(webPort) });
    const worker = startRole("worker", {
      REDIS_PREFIX: prefix,
      METRICS_PORT: String(workerMetricsPort),
    });
    const webMetrics = `http://127.0.0.1:${webPort}/metrics`;
    for (const role of ["web", "worker"]) {
      await expect
        .poll(
          () => sampleAt(webMetrics, `connector_role_heartbeat_timestamp_seconds{role="${role}"}`),
          { timeout: 60_000, interval: 250 },
        )
        .toBeGreaterThanOrEqual(Math.floor(started));
    }
    expect(
      await sampleAt(webMetrics, 'connector_role_heartbeat_timestamp_seconds{role="worker"}'),
    ).toBeLessThanOrEqual(Date.now() / 1000);
    // The worker's own counters, on its METRICS_PORT, start at zero by reason.
    const workerText = await (await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`)).text();
    expect(workerText).toContain("# TYPE connector_dead_letters_total counter");
    expect(workerText).toContain("# TYPE connector_store_provider_rate_limited_total counter");
    expect(web.out() + worker.out()).not.toContain('"level":"error"');
  });
});
