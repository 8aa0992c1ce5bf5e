import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { service } from "../helpers/services.ts";

/**
 * The production bundle (`npm run build`, what the Dockerfile and docker-compose run) must start
 * and serve like the sources: a dependency that reads its own files, or a dynamic import the
 * bundler cannot see, only fails here.
 */
const dir = mkdtempSync(join(tmpdir(), "connector-bundle-"));
let web: ChildProcess | undefined;
let port = 0;

beforeAll(async () => {
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { stdio: "pipe" });
  port = await freePort();
  web = spawn(
    process.execPath,
    [
      "--enable-source-maps",
      "--max-semi-space-size=8",
      "--max-old-space-size=160",
      "dist/main.mjs",
      "--role",
      "web",
    ],
    {
      env: {
        ...process.env,
        PORT: String(port),
        REDIS_URL: service("redisUrl"),
        REDIS_PREFIX: "bundle-test",
        DATABASE_PATH: join(dir, "c.sqlite"),
        PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
        PROVIDER_AUTH_URL: "http://127.0.0.1:9",
        PROVIDER_AUDIENCE: "bundle-test",
        ADMIN_TOKEN: "bundle-admin-token",
        LOG_LEVEL: "silent",
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the bundled web process did not answer /healthz within 20 s");
}, 60_000);

afterAll(() => {
  web?.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("production bundle", () => {
  it("serves health, readiness and the webhook receiver", async () => {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      ready: true,
      checks: { redis: true, sqlite: true },
    });
    const unsigned = await fetch(`http://127.0.0.1:${port}/webhooks/shopify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(unsigned.status).toBe(401);
  });

  it("serves the queue dashboard behind the admin token", async () => {
    const refused = await fetch(`http://127.0.0.1:${port}/admin/queues`, { redirect: "manual" });
    expect([401, 302, 303]).toContain(refused.status);
    const page = await fetch(`http://127.0.0.1:${port}/admin/queues`, {
      headers: { authorization: "Bearer bundle-admin-token" },
    });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
  });

  it("contains neither development stand-in, and names what to set when one is asked for", () => {
    // The entry points and every chunk they load.
    const files = readdirSync("dist").filter((name) => name.endsWith(".mjs"));
    expect(files).toEqual(expect.arrayContaining(["main.mjs", "cli.mjs"]));
    for (const file of files) {
      const code = readFileSync(join("dist", file), "utf8");
      // The provider sandbox's app, the stand-in Shopify's app, and graphql-js they need.
      expect(code).not.toMatch(/function createSandboxApp|function createShopifyStandInApp/);
      expect(code).not.toMatch(/node_modules\/graphql\//);
    }
    const run = spawnSync(process.execPath, ["dist/cli.mjs", "sandbox"], {
      encoding: "utf8",
      env: { ...process.env, LOG_LEVEL: "silent" },
    });
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toBe(
      "connector: `connector sandbox` is a development tool and is not in the production build: run it from a source checkout after `npm install`",
    );
  });

  describe("compile cache", () => {
    // The cache lives under the temporary directory unless NODE_COMPILE_CACHE says otherwise;
    // Node turns that variable on itself, so these runs leave it unset and move TMPDIR.
    const run = (tmp: string) => {
      const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp, LOG_LEVEL: "silent" };
      delete env.NODE_COMPILE_CACHE;
      return spawnSync(process.execPath, ["dist/cli.mjs", "--help"], { encoding: "utf8", env });
    };
    const cacheDir = (tmp: string) =>
      join(tmp, `connector-compile-cache-${process.getuid?.() ?? 0}`);
    const filesUnder = (root: string): string[] =>
      readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name));

    it("keeps the compiled code in a private directory, and starts from a damaged one", () => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      const first = run(tmp);
      expect(first.status).toBe(0);
      expect(first.stdout).toMatch(/^Usage: connector/);
      expect(statSync(cacheDir(tmp)).mode & 0o777).toBe(0o700);
      const cached = filesUnder(cacheDir(tmp));
      expect(cached.length).toBeGreaterThan(0);
      // A crash halfway through writing, or a disk that garbled it.
      for (const file of cached) writeFileSync(file, Buffer.alloc(4096, 0x5a));
      const second = run(tmp);
      expect(second.status).toBe(0);
      expect(second.stdout).toBe(first.stdout);
    });

    it("is not used from a directory other users can write to", () => {
      const tmp = mkdtempSync(join(dir, "tmp-"));
      mkdirSync(cacheDir(tmp));
      chmodSync(cacheDir(tmp), 0o777);
      const result = run(tmp);
      expect(result.status).toBe(0);
      expect(filesUnder(cacheDir(tmp))).toEqual([]);
    });
  });
});
