import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { service } from "../helpers/services.ts";

/**
 * package.json's engines admit Node 22.15, so a newcomer on Node 22 runs the connector under it:
 * the wrapper fetches Node 24 only for an older Node. Every other test runs under Node 24, so
 * this file runs the product under the oldest Node that engines admit, fetched once from the npm
 * registry into the wrapper's per-user cache. The bundle builds, the CLI answers, the web process
 * serves and stops, and none of them prints a word on stderr. Before this file, `fs.globSync`
 * (experimental in Node 22) printed an ExperimentalWarning on the first `npx connector` of a
 * checkout, and a stale "Node 22.14" stood in the image's too-old message.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const WRAPPER = join(ROOT, "scripts", "with-node.mjs");
// One folder below dist/, as the development bundle is: it finds ../../drizzle from there.
const out = join(ROOT, "dist", `minimum-node-${process.pid}`);
const dir = mkdtempSync(join(tmpdir(), "minimum-node-"));
let node = "";
let minimum = "";
let web: ChildProcess | undefined;

/** The environment of a process started by hand: none of npm's or vitest's variables. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(npm_|VITEST|NODE_OPTIONS$|NODE_ENV$|TEST$)/i.test(name)) env[name] = value;
  }
  return { ...env, ...extra };
}

beforeAll(() => {
  const fetched = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `import { cachedNode, requiredVersion } from ${JSON.stringify(pathToFileURL(WRAPPER).href)};
       const exact = [...requiredVersion().split("."), "0", "0"].slice(0, 3).join(".");
       const why = "the tests run the product under the oldest Node package.json admits";
       console.log(JSON.stringify({ exact, path: cachedNode(exact, why).path }));`,
    ],
    { cwd: ROOT, env: cleanEnv(), encoding: "utf8", timeout: 240_000 },
  );
  expect(fetched.status, fetched.stderr).toBe(0);
  ({ exact: minimum, path: node } = JSON.parse(fetched.stdout));
}, 300_000);

afterAll(async () => {
  if (web && web.exitCode === null && web.signalCode === null) {
    const exited = new Promise((done) => web?.once("exit", done));
    web.kill("SIGKILL");
    await exited;
  }
  rmSync(out, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe("under the oldest Node package.json admits", () => {
  it("is that Node, with the Node-API better-sqlite3 needs", () => {
    const run = spawnSync(node, ["-p", "JSON.stringify(process.versions)"], { encoding: "utf8" });
    const versions = JSON.parse(run.stdout);
    expect(versions.node).toBe(minimum);
    expect(Number(versions.napi)).toBeGreaterThanOrEqual(10);
  });

  it("builds the product's bundle without a warning", () => {
    const run = spawnSync(
      node,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { bundle, PRODUCT_ENTRIES } from "./scripts/bundle.ts";
         await bundle(PRODUCT_ENTRIES, { outdir: ${JSON.stringify(out)} }, { leaveOut: /^@connector\\// });`,
      ],
      { cwd: ROOT, env: cleanEnv(), encoding: "utf8", timeout: 120_000 },
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  }, 150_000);

  it("runs a CLI command on a new SQLite file, saying nothing on stderr", () => {
    const run = spawnSync(node, [join(out, "cli.mjs"), "shops", "list", "--json"], {
      cwd: dir,
      env: cleanEnv({ DATABASE_PATH: join(dir, "cli.sqlite"), LOG_LEVEL: "silent" }),
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([]);
  }, 90_000);

  it("serves as the web process, stops on SIGTERM, and says nothing on stderr", async () => {
    const port = await freePort();
    let stderr = "";
    web = spawn(node, [join(out, "main.mjs"), "--role", "web"], {
      cwd: dir,
      env: cleanEnv({
        PORT: String(port),
        REDIS_URL: service("redisUrl"),
        REDIS_PREFIX: "minimum-node-test",
        DATABASE_PATH: join(dir, "web.sqlite"),
        PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
        PROVIDER_AUTH_URL: "http://127.0.0.1:9",
        PROVIDER_AUDIENCE: "minimum-node-test",
        LOG_LEVEL: "silent",
      }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    web.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((done) => web?.once("exit", (code) => done(code)));
    let ready: unknown = null;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && !ready; ) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => (r.ok ? r.json() : null),
        () => null,
      );
      if (!ready) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready, stderr).toMatchObject({ ready: true, checks: { redis: true, sqlite: true } });
    web.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toBe("");
  }, 60_000);
});
