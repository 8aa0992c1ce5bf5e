import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { collectOutput } from "../helpers/child-output.ts";
import { cliEntry, connectorEntry } from "../helpers/cli.ts";
import { freePortPair } from "../helpers/ports.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

/**
 * `REDIS_CLUSTER_NODES=… npm start` and `DATABASE_URL=… npm start`, as the README shows them:
 * the whole connector (web, workers, the built-in sandbox) on the run's three-master Redis
 * Cluster, with its links in SQLite or in a database of the run's Postgres; an order sent through
 * the CLI, and the CLI reading it back from the same Redis and database.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "scale-start-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

async function baseEnv(port: number, postgres: boolean): Promise<Record<string, string>> {
  const data = join(dir, postgres ? "pg" : "sqlite");
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    PORT: String(port),
    DATABASE_PATH: join(data, "connector.sqlite"),
    ...(postgres ? { DATABASE_URL: await createTestDatabase(service("postgresUrl")) } : {}),
    REDIS_CLUSTER_NODES: service("redisClusterNodes"),
    REDIS_PREFIX: `scale-start-${postgres ? "pg" : "sqlite"}-${process.pid}`,
  };
}

async function cli(env: Record<string, string>, args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [...cliEntry(), ...args], {
      cwd: ROOT,
      env: { ...env, LOG_LEVEL: "silent" },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

describe.each([
  { variables: "REDIS_CLUSTER_NODES", postgres: false },
  { variables: "REDIS_CLUSTER_NODES and DATABASE_URL", postgres: true },
])("npm start with $variables", ({ postgres }) => {
  it("starts, syncs an order sent to it, and the CLI reads it back", async () => {
    const port = await freePortPair();
    const env = await baseEnv(port, postgres);
    const child = spawn(process.execPath, connectorEntry(), {
      cwd: ROOT,
      env: { ...env, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    const { out } = collectOutput(child);
    const deadline = Date.now() + 60_000;
    while (!out().includes("connector ready")) {
      if (child.exitCode !== null) throw new Error(`exited: ${out()}`);
      if (Date.now() > deadline) throw new Error(`not ready within 60 s: ${out()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // No private redis-server when a cluster is configured.
    expect(out()).not.toContain("started a private redis-server");

    const sent = await cli(env, [
      "webhook",
      "send",
      "--topic",
      "orders/create",
      "--shop",
      "demo-shop.myshopify.com",
      "--file",
      "examples/orders-create.json",
      "--url",
      `http://127.0.0.1:${port}/webhooks/shopify`,
    ]);
    expect(sent.stdout).toMatch(/^200 .*"outcome":"queued"/);

    const show = ["orders", "show", "--shop", "demo-shop.myshopify.com", "--order", "#1001"];
    let shown = await cli(env, [...show, "--json"]);
    while (shown.code !== 0 || JSON.parse(shown.stdout).lastResult !== "synced") {
      if (Date.now() > deadline + 30_000) throw new Error(`never synced: ${shown.stderr} ${out()}`);
      await new Promise((r) => setTimeout(r, 250));
      shown = await cli(env, [...show, "--json"]);
    }
    expect(JSON.parse(shown.stdout)).toMatchObject({
      sourceOrderId: "5906323456123",
      lastResult: "synced",
    });

    // The CLI's own Redis work (queue counts, dead letters) goes to the cluster too.
    const status = await cli(env, ["status", "--json"]);
    expect(status.stderr).toBe("");
    expect(status.code).toBe(0);
    const dlq = await cli(env, ["dlq", "list", "--json"]);
    expect(dlq.code).toBe(0);
    expect(JSON.parse(dlq.stdout)).toMatchObject({ entries: [], total: 0 });

    child.kill("SIGTERM");
    expect(await new Promise((r) => child.once("exit", r))).toBe(0);
  }, 120_000);
});
