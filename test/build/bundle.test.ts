import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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
    for (const file of ["dist/main.mjs", "dist/cli.mjs"]) {
      const code = readFileSync(file, "utf8");
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
      "connector sandbox is a development tool and is not in the production build: run it from a source checkout after `npm install`",
    );
  });
});
