import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { collectOutput } from "../helpers/child-output.ts";
import { enginesMinimum, oldNode } from "../helpers/old-node.ts";
import { descendantsOf, type SeenProcess, signalSeen } from "../helpers/processes.ts";

/**
 * `npx connector …` as a newcomer runs it, on a machine whose Node is too old (Debian's 20) and
 * with an npm cache that has never seen this checkout: npm must not install the checkout into
 * its npx cache (that printed five lines of `npm warn EBADENGINE` and cost seconds a call), and
 * a warm call runs the CLI bundle it built before rather than building or transpiling again.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "connector-bin-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const OLD_NODE = oldNode();
// A warm Node cache whose Node 24 is the one running these tests (nothing fetched).
const cache = join(dir, "node-cache");
const cachedHome = join(cache, `node-24-${process.platform}-${process.arch}`);
const cachedBin = join(
  cachedHome,
  "node_modules",
  `node-${process.platform}-${process.arch}`,
  "bin",
);
mkdirSync(cachedBin, { recursive: true });
symlinkSync(process.execPath, join(cachedBin, "node"));
const npmCache = join(dir, "npm-cache");

/** Whether a process runs (not exited, not a zombie waiting for its parent). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

/** A newcomer's environment for npx, on a machine whose Node is too old. */
function npxEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // What npm (running vitest) and vitest put in the environment is not a newcomer's.
  for (const name of Object.keys(env)) {
    if (/^npm_/i.test(name) || name.startsWith("VITEST") || name === "NODE_OPTIONS") {
      delete env[name];
    }
  }
  return {
    ...env,
    PATH: `${dirname(OLD_NODE)}${delimiter}${process.env.PATH ?? ""}`,
    CONNECTOR_NODE_CACHE: cache,
    npm_config_cache: npmCache,
    npm_config_update_notifier: "false",
    DATABASE_PATH: join(dir, "cli.sqlite"),
    LOG_LEVEL: "silent",
  };
}

function npx(args: string[]) {
  return spawnSync("npx", ["connector", ...args], {
    cwd: ROOT,
    env: npxEnv(),
    encoding: "utf8",
    timeout: 120_000,
  });
}

/**
 * Once `outer` runs `connector sandbox`, a SIGTERM sent to `outer` alone stops it and the (at
 * least `atLeast`) processes under it; any left are killed after.
 */
async function stopsWithIt(outer: ChildProcess, atLeast: number) {
  const { out, exited } = collectOutput(outer);
  const inner: SeenProcess[] = [];
  try {
    await expect.poll(out, { timeout: 60_000 }).toContain("provider sandbox running");
    inner.push(...descendantsOf(outer.pid as number));
    expect(inner.length).toBeGreaterThanOrEqual(atLeast);
    outer.kill("SIGTERM");
    await exited;
    await expect
      .poll(() => inner.map((p) => p.pid).filter(running), { timeout: 20_000 })
      .toEqual([]);
  } finally {
    // Only while each is still the process seen: a pid left over may be another's by now.
    outer.kill("SIGKILL");
    for (const p of inner) signalSeen(p, "SIGKILL");
  }
}

describe("npx connector", () => {
  it("runs the command with no npm noise and no install into npm's npx cache", () => {
    const first = npx(["shops", "list", "--json"]);
    expect(first.status, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual([]);
    expect(first.stderr).not.toMatch(/npm (warn|WARN|ERR)|EBADENGINE/);
    expect(first.stderr).toBe(
      `connector: using Node ${process.versions.node} from ${cachedHome}\n`,
    );
    expect(existsSync(join(npmCache, "_npx"))).toBe(false);
  }, 150_000);

  it("once warm, runs the bundle it built and builds nothing again", () => {
    const bundle = join(ROOT, "dist", "dev", "cli.mjs");
    expect(npx(["shops", "list", "--json"]).status).toBe(0);
    const built = statSync(bundle).mtimeMs;
    const warm = npx(["shops", "list", "--json"]);
    expect(warm.status, warm.stderr).toBe(0);
    expect(warm.stderr).toBe(`connector: using Node ${process.versions.node} from ${cachedHome}\n`);
    expect(statSync(bundle).mtimeMs).toBe(built);
  }, 150_000);

  it("under an old Node, passes a SIGTERM sent to it alone to the command it runs under the new one", async () => {
    // `kill PID` of the process an operator sees for `connector sandbox`: before, it ended that
    // process (blocked in spawnSync) and left the sandbox running under init.
    const outer = spawn(OLD_NODE, [join(ROOT, "bin", "connector.js"), "sandbox", "--port", "0"], {
      cwd: ROOT,
      env: {
        PATH: `${dirname(OLD_NODE)}${delimiter}${process.env.PATH ?? ""}`,
        HOME: process.env.HOME ?? dir,
        CONNECTOR_NODE_CACHE: cache,
        DATABASE_PATH: join(dir, "cli.sqlite"),
        LOG_LEVEL: "silent",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    await stopsWithIt(outer, 1);
  }, 90_000);

  it("stops with npx when npx alone is sent a SIGTERM", async () => {
    // npx runs the command under `sh -c`, which ends on the SIGTERM without passing it on:
    // before, `connector sandbox` (and the Node it runs under) ran on under init.
    const outer = spawn("npx", ["connector", "sandbox", "--port", "0"], {
      cwd: ROOT,
      env: npxEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    await stopsWithIt(outer, 2);
  }, 90_000);

  it("in an install without scripts/ (the image), stops an old Node with one line naming engines' minimum", () => {
    const install = join(dir, "image");
    mkdirSync(join(install, "bin"), { recursive: true });
    copyFileSync(join(ROOT, "bin", "connector.js"), join(install, "bin", "connector.js"));
    copyFileSync(join(ROOT, "package.json"), join(install, "package.json"));
    const run = spawnSync(OLD_NODE, [join(install, "bin", "connector.js"), "--help"], {
      encoding: "utf8",
    });
    const version = spawnSync(OLD_NODE, ["-p", "process.versions.node"], { encoding: "utf8" });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(
      `connector: Node ${version.stdout.trim()} is too old; the connector needs Node ${enginesMinimum()} or newer\n`,
    );
  });
});
