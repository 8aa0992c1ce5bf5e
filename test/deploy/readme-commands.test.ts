import { execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";

/**
 * The README's two commands on a fresh clone, with the machine's own Node first on PATH (Node 20
 * here) and an empty Node cache: `npm install && npm start` answers /healthz, and
 * `npm ci && npm test` passes (a slice of the suite: the same wrapper, the same runner).
 */
const ROOT = resolve(import.meta.dirname, "../..");
const SYSTEM_NODE_DIR = "/usr/bin";
const dir = mkdtempSync(join(tmpdir(), "readme-"));
const clone = join(dir, "clone");
const cache = join(dir, "node-cache");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const systemMajor = Number(
  execFileSync(join(SYSTEM_NODE_DIR, "node"), ["-p", "process.versions.node.split('.')[0]"], {
    encoding: "utf8",
  }).trim(),
);
const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: `${SYSTEM_NODE_DIR}:${process.env.PATH ?? ""}`,
  CONNECTOR_NODE_CACHE: cache,
  LOG_LEVEL: "info",
};
// Nothing of the outer run leaks in: the commands choose their own Node and Redis.
for (const name of [
  "REDIS_URL",
  "npm_config_nodedir",
  "NODE_OPTIONS",
  "VITEST",
  "VITEST_POOL_ID",
  "VITEST_WORKER_ID",
  "NODE_ENV",
  "TEST",
]) {
  delete env[name];
}

describe("the README's quick start on a fresh clone", () => {
  it("npm install && npm start: the connector answers /healthz under the Node the wrapper brings", async () => {
    execFileSync("git", ["clone", "-q", ROOT, clone]);
    const port = await freePort();
    const child = spawn("sh", ["-c", "npm install --no-audit --no-fund && npm start"], {
      cwd: clone,
      env: { ...env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      out += c.toString();
    });
    try {
      const deadline = Date.now() + 240_000;
      let healthy = false;
      while (!healthy && Date.now() < deadline && child.exitCode === null) {
        healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (!healthy) await new Promise((r) => setTimeout(r, 250));
      }
      expect(healthy, out.slice(-2000)).toBe(true);
      expect(out).toMatch(
        /connector: using Node 24\.\d+\.\d+ from|connector: using Node \d+\.\d+\.\d+ from this machine/,
      );
      if (systemMajor < 22) {
        expect(out).toContain(
          `older than 22: fetching node@24 from the npm registry into ${cache} (once)`,
        );
      }
    } finally {
      if (child.pid) process.kill(-child.pid, "SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  }, 300_000);

  it("npm ci && npm test: the tests pass, and the warm cache downloads nothing", () => {
    const run = spawnSync("sh", ["-c", "npm ci --no-audit --no-fund && npm test -- test/unit"], {
      cwd: clone,
      env,
      encoding: "utf8",
      timeout: 240_000,
    });
    const out = `${run.stdout}${run.stderr}`;
    expect(run.status, out.slice(-3000)).toBe(0);
    expect(out).toMatch(/tests: [1-9]\d* passed, 0 failed/);
    expect(out).not.toContain("fetching node@24");
  }, 300_000);

  it("npx connector under the machine's Node runs under the wrapper's (no segmentation fault)", () => {
    const run = spawnSync("npx", ["connector", "shops", "list", "--json"], {
      cwd: clone,
      env: { ...env, DATABASE_PATH: join(dir, "cli.sqlite") },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, `${run.stdout}${run.stderr}`).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([]);
  }, 90_000);
});
