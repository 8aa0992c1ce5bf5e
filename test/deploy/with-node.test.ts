import { execFileSync, spawnSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { enginesMinimum, oldNode } from "../helpers/old-node.ts";

/**
 * scripts/with-node.mjs, the door every README command goes through, with a warm cache (the
 * whole path from an empty cache on a fresh clone is test/chaos/readme-commands.chaos.ts): which
 * Node it picks, what it says, that it downloads nothing and compiles nothing.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const WRAPPER = join(ROOT, "scripts/with-node.mjs");
const dir = mkdtempSync(join(tmpdir(), "with-node-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OLD_NODE = oldNode();
const oldMajor = execFileSync(OLD_NODE, ["-p", "process.versions.node"], { encoding: "utf8" });
// A warm cache whose Node 24 is the one running these tests (nothing fetched).
const cache = join(dir, "cache");
const cachedHome = join(cache, `node-24-${process.platform}-${process.arch}`);
const cachedBin = join(
  cachedHome,
  "node_modules",
  `node-${process.platform}-${process.arch}`,
  "bin",
);
mkdirSync(cachedBin, { recursive: true });
symlinkSync(process.execPath, join(cachedBin, "node"));
function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(OLD_NODE)}${delimiter}${process.env.PATH ?? ""}`,
    CONNECTOR_NODE_CACHE: cache,
  };
  for (const name of ["npm_config_nodedir", "NODE_OPTIONS", "VITEST", "VITEST_POOL_ID"]) {
    delete base[name];
  }
  return { ...base, ...extra };
}

describe("scripts/with-node.mjs", () => {
  it("under an old Node with a warm cache, runs the command under the cached Node and fetches nothing", () => {
    const run = spawnSync(OLD_NODE, [WRAPPER, "node", "-p", "process.versions.node"], {
      cwd: ROOT,
      env: env(),
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe(process.versions.node);
    expect(run.stderr).toBe(`connector: using Node ${process.versions.node} from ${cachedHome}\n`);
  });

  it("under a Node new enough, says so and leaves the cache alone", () => {
    const empty = join(dir, "never-created");
    const run = spawnSync(process.execPath, [WRAPPER, "node", "-p", "process.execPath"], {
      cwd: ROOT,
      env: env({ CONNECTOR_NODE_CACHE: empty }),
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe(process.execPath);
    expect(run.stderr).toBe(`connector: using Node ${process.versions.node} from this machine\n`);
    expect(existsSync(empty)).toBe(false);
  });

  it("npx connector under the old Node runs under the cached one instead of crashing", () => {
    // What it replaces: the old Node itself loads better-sqlite3's Node-API 10 build and crashes.
    const crash = spawnSync(OLD_NODE, ["-e", 'require("better-sqlite3")(":memory:")'], {
      cwd: ROOT,
      env: env(),
    });
    expect(crash.signal, `Node ${oldMajor}`).toBe("SIGSEGV");

    const run = spawnSync(OLD_NODE, [join(ROOT, "bin/connector.js"), "shops", "list", "--json"], {
      cwd: ROOT,
      env: env({ DATABASE_PATH: join(dir, "cli.sqlite"), LOG_LEVEL: "silent" }),
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([]);
    expect(run.stderr).toContain(
      `connector: using Node ${process.versions.node} from ${cachedHome}`,
    );
  }, 60_000);

  it("a native build for another Node left in node_modules: stops with one line naming the fix, compiles nothing", () => {
    // A project of its own: the wrapper, and better-sqlite3 with a build left for another Node
    // (what an install from before .npmrc's ignore-scripts may have left).
    const project = join(dir, "project");
    mkdirSync(join(project, "scripts"), { recursive: true });
    copyFileSync(WRAPPER, join(project, "scripts/with-node.mjs"));
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "p",
        private: true,
        engines: { node: ">=22" },
        dependencies: { "better-sqlite3": "*" },
      }),
    );
    cpSync(
      join(ROOT, "node_modules/better-sqlite3"),
      join(project, "node_modules/better-sqlite3"),
      {
        recursive: true,
        filter: (source) => !source.includes("better-sqlite3/build"),
      },
    );
    const stale = join(project, "node_modules/better-sqlite3/build/Release/better_sqlite3.node");
    mkdirSync(dirname(stale), { recursive: true });
    writeFileSync(stale, "built for another Node");

    const probe = 'require("better-sqlite3")(":memory:"); console.log("loaded")';
    const run = spawnSync(OLD_NODE, ["scripts/with-node.mjs", "node", "-e", probe], {
      cwd: project,
      env: env(),
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trim().split("\n").at(-1)).toBe(
      `connector: better-sqlite3 does not load under Node ${process.versions.node} (node_modules/better-sqlite3/build holds a build for another Node, left by an older install): run \`rm -rf node_modules && npm ci\` and the command again`,
    );
    expect(existsSync(stale)).toBe(true);

    // The fix as named (the build/ directory gone, as a fresh `npm ci` leaves it): it loads the
    // binary better-sqlite3 ships.
    rmSync(join(project, "node_modules/better-sqlite3/build"), { recursive: true });
    const fixed = spawnSync(OLD_NODE, ["scripts/with-node.mjs", "node", "-e", probe], {
      cwd: project,
      env: env(),
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(fixed.stdout).toBe("loaded\n");
  }, 120_000);

  it("npm run start:prod with no bundle, or one built before a source changed: stops with the build to run", () => {
    // A project of its own: the wrapper, a source, and (later) its bundle.
    const project = join(dir, "bundled");
    mkdirSync(join(project, "scripts"), { recursive: true });
    mkdirSync(join(project, "src/sync"), { recursive: true });
    copyFileSync(WRAPPER, join(project, "scripts/with-node.mjs"));
    writeFileSync(join(project, "package.json"), JSON.stringify({ engines: { node: ">=22" } }));
    writeFileSync(join(project, "package-lock.json"), "{}");
    writeFileSync(join(project, "src/sync/map.ts"), "export {};");
    const start = () =>
      spawnSync(
        process.execPath,
        ["scripts/with-node.mjs", "--needs", "build", "node", "dist/main.mjs"],
        { cwd: project, env: env(), encoding: "utf8" },
      );
    const lastLine = (run: ReturnType<typeof start>) => run.stderr.trim().split("\n").at(-1);

    // Before: node's MODULE_NOT_FOUND and its stack.
    const unbuilt = start();
    expect(unbuilt.status).toBe(1);
    expect(lastLine(unbuilt)).toBe(
      "connector: dist/main.mjs is missing: build the production bundle with `npm run build`, then run the command again",
    );

    mkdirSync(join(project, "dist"));
    writeFileSync(join(project, "dist/main.mjs"), 'console.log("the bundle runs");');
    const built = start();
    expect(built.status, built.stderr).toBe(0);
    expect(built.stdout).toBe("the bundle runs\n");

    // A source changed after the build (a `git pull`): the bundle would run the old code.
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(project, "src/sync/map.ts"), later, later);
    const stale = start();
    expect(stale.status).toBe(1);
    expect(stale.stdout).toBe("");
    expect(lastLine(stale)).toBe(
      "connector: dist/main.mjs was built before src/sync/map.ts changed: build it again with `npm run build`, then run the command again",
    );
  });

  it("counts a Node below engines' minimum, or without Node-API 10, as too old", () => {
    const verdicts = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { tooOld } = await import(${JSON.stringify(WRAPPER)});
         console.log(JSON.stringify([["20.20.2", "9"], ["22.5.1", "9"], ["22.14.0", "10"],
           ["22.15.0", "10"], ["23.0.0", "9"], ["23.6.0", "10"], ["24.21.0", "10"]]
           .map(([node, napi]) => tooOld({ node, napi }))));`,
      ],
      { encoding: "utf8" },
    );
    expect(JSON.parse(verdicts)).toEqual([
      "older than 22.15",
      "older than 22.15",
      // Node-API 10, but below the OpenTelemetry packages' floor (package.json's engines).
      "older than 22.15",
      null,
      // New enough by number, but better-sqlite3's binaries would crash under it.
      "without Node-API 10 (better-sqlite3 needs it)",
      null,
      null,
    ]);
  });

  it("a missing redis-server it cannot install: stops with the one command that does", () => {
    // No apt-get and no redis-server on PATH: what a user without root sees too.
    const bare = join(dir, "bare-bin");
    mkdirSync(bare, { recursive: true });
    symlinkSync(process.execPath, join(bare, "node"));
    const run = spawnSync(
      join(bare, "node"),
      [WRAPPER, "--needs", "redis-server", "node", "-e", ""],
      { cwd: ROOT, env: { PATH: bare, HOME: dir }, encoding: "utf8" },
    );
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split("\n").at(-1)).toBe(
      "connector: redis-server is missing: install it with `sudo apt-get install redis-server` (Debian/Ubuntu), or `brew install redis` (macOS), then run the command again",
    );
  });

  it("a Node cache it cannot write (a service user's home): stops with one line, no stack", () => {
    // Root may write anywhere, so the cache is put under a file: mkdir fails as EACCES would.
    const file = join(dir, "not-a-directory");
    writeFileSync(file, "");
    const cacheUnderFile = join(file, "cache");
    const run = spawnSync(OLD_NODE, [WRAPPER, "node", "-e", ""], {
      cwd: ROOT,
      env: env({ CONNECTOR_NODE_CACHE: cacheUnderFile }),
      encoding: "utf8",
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim().split("\n")).toEqual([
      `connector: this machine's Node is ${oldMajor.trim()}, older than ${enginesMinimum()}: fetching node-${process.platform}-${process.arch}@24 from the npm registry into ${join(cacheUnderFile, `node-24-${process.platform}-${process.arch}`)} (once)`,
      `connector: cannot write the Node cache ${cacheUnderFile} (ENOTDIR): set CONNECTOR_NODE_CACHE to a directory this user may write, or install Node 24 (https://nodejs.org)`,
    ]);
  });
});
