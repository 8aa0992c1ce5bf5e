import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { collectOutput } from "../helpers/child-output.ts";
import { bareMachine } from "../helpers/no-toolchain.ts";
import { enginesMinimum, oldNode } from "../helpers/old-node.ts";
import { freePortPair } from "../helpers/ports.ts";

/**
 * The README's two commands, verbatim, on fresh clones of this repository, as a newcomer runs
 * them: the machine's own Node first on PATH (Debian's Node 20 here), an empty home directory
 * (no npm cache, no Node cache, no ~/.npmrc) and no C toolchain on PATH. Each step's time is
 * printed: these are the cold and warm figures in docs/development.md.
 *
 * The test command runs a slice of the suite, `npm test -- <files>`: the same wrapper, the same
 * runner, the same global set-up (a private redis-server) and the three kinds of part that
 * depend on the Node and the machine (SQLite through better-sqlite3, BullMQ on Redis, Chromium).
 * The whole suite under that command is what `.ci/run` runs, on this same kind of machine.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const OLD_NODE = oldNode();
const SLICE = [
  "test/store/store.test.ts",
  "test/integration/pipeline.test.ts",
  "test/server/admin/dashboard.browser.test.ts",
  "test/deploy/with-node.test.ts",
];
const dir = mkdtempSync(join(tmpdir(), "readme-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A fresh clone and an empty home directory of its own, on a machine without a C toolchain: no
 * cc, gcc, g++, make or python3 on PATH, no ~/.npmrc (so no nodedir) and none of this process's
 * npm settings. Nothing may need compiling.
 */
function newcomer(name: string): { clone: string; env: NodeJS.ProcessEnv } {
  const clone = join(dir, name, "clone");
  const machine = bareMachine(join(dir, name), { node: OLD_NODE });
  execFileSync("git", ["clone", "-q", ROOT, clone]);
  const env: NodeJS.ProcessEnv = { ...machine.env, CI: "true", LOG_LEVEL: "info" };
  return { clone, env };
}

interface Run {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Run {
  const child = spawn("sh", ["-c", command], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const { out, exited } = collectOutput(child);
  return { child, output: out, exited };
}

/** `npm install && npm start` until /healthz answers; the seconds it took. */
async function startUntilHealthy(clone: string, env: NodeJS.ProcessEnv): Promise<[number, string]> {
  const port = await freePortPair(); // npm start puts its sandbox on PORT + 1
  const started = Date.now();
  const run = sh("npm install && npm start", clone, { ...env, PORT: String(port) });
  try {
    let healthy = false;
    while (!healthy && Date.now() - started < 400_000 && run.child.exitCode === null) {
      healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (!healthy) await new Promise((r) => setTimeout(r, 200));
    }
    const seconds = (Date.now() - started) / 1000;
    expect(healthy, run.output().slice(-3000)).toBe(true);
    return [seconds, run.output()];
  } finally {
    if (run.child.pid && run.child.exitCode === null) process.kill(-run.child.pid, "SIGTERM");
    await run.exited;
  }
}

/** `npm ci && npm test -- <slice>`; the seconds it took. */
async function testCommand(clone: string, env: NodeJS.ProcessEnv): Promise<[number, string]> {
  const started = Date.now();
  const run = sh(`npm ci && npm test -- ${SLICE.join(" ")}`, clone, env);
  const code = await run.exited;
  expect(code, run.output().slice(-4000)).toBe(0);
  return [(Date.now() - started) / 1000, run.output()];
}

const fetchLine = (home: string) =>
  `this machine's Node is ${execFileSync(OLD_NODE, ["-p", "process.versions.node"], { encoding: "utf8" }).trim()}, older than ${enginesMinimum()}: fetching node-${process.platform}-${process.arch}@24 from the npm registry into ${home}/.cache/order-sync-connector/node-24-${process.platform}-${process.arch} (once)`;

describe("the README's commands on a fresh machine with Node 20", () => {
  const starter = newcomer("start");
  const tester = newcomer("test");

  it("npm install && npm start, empty caches: fetches Node 24 once and answers /healthz", async () => {
    const [seconds, out] = await startUntilHealthy(starter.clone, starter.env);
    console.log(`cold: npm install && npm start → /healthz in ${seconds.toFixed(1)} s`);
    expect(out).toContain(`connector: ${fetchLine(starter.env.HOME as string)}`);
    expect(out).toMatch(/connector: using Node 24\.\d+\.\d+ from .*order-sync-connector/);
  }, 420_000);

  it("npm ci && npm test, empty caches: the tests pass under the fetched Node", async () => {
    const [seconds, out] = await testCommand(tester.clone, tester.env);
    console.log(`cold: npm ci && npm test -- <${SLICE.length} files> in ${seconds.toFixed(1)} s`);
    expect(out).toContain(`connector: ${fetchLine(tester.env.HOME as string)}`);
    expect(out).toMatch(/tests: [1-9]\d* passed, 0 failed, 0 skipped/);
  }, 420_000);

  it("both commands again with warm caches: nothing fetched", async () => {
    const [start, startOut] = await startUntilHealthy(starter.clone, starter.env);
    const [test, testOut] = await testCommand(tester.clone, tester.env);
    console.log(`warm: npm install && npm start → /healthz in ${start.toFixed(1)} s`);
    console.log(`warm: npm ci && npm test -- <${SLICE.length} files> in ${test.toFixed(1)} s`);
    for (const out of [startOut, testOut]) {
      expect(out).not.toContain("fetching");
      expect(out).toMatch(/connector: using Node 24\.\d+\.\d+ from /);
    }
  }, 420_000);

  it("npx connector under the machine's Node runs under the fetched one", () => {
    const out = execFileSync("npx", ["connector", "shops", "list", "--json"], {
      cwd: starter.clone,
      env: { ...starter.env, DATABASE_PATH: join(dir, "cli.sqlite"), LOG_LEVEL: "silent" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(JSON.parse(out)).toEqual([]);
  }, 90_000);
});
