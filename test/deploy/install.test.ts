import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { bareMachine, TOOLCHAIN_PROGRAMS } from "../helpers/no-toolchain.ts";

/**
 * The README's install step on a machine with no C toolchain: an empty home (no npm cache, no
 * ~/.npmrc naming a nodedir), none of this process's npm settings, and no cc, gcc, g++, make or
 * python3 on PATH. npm then cannot build anything (node-gyp needs all of them and the Node
 * headers from nodejs.org), so `npm ci` and `npm install` pass only if nothing is built; and
 * better-sqlite3 must then load the binary its own package ships.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "install-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What `npm ci` reads from a clone: the manifest, the lock, the project's npm settings, packages/. */
function slice(name: string): string {
  const project = join(dir, name);
  mkdirSync(project);
  for (const file of ["package.json", "package-lock.json", ".npmrc"]) {
    copyFileSync(join(ROOT, file), join(project, file));
  }
  // The stand-ins are dev dependencies installed from packages/ (file: links).
  cpSync(join(ROOT, "packages"), join(project, "packages"), {
    recursive: true,
    filter: (source) => !source.includes("node_modules"),
  });
  return project;
}

function npm(args: string[], cwd: string, env: Record<string, string>): void {
  const run = spawnSync("npm", [...args, "--no-audit", "--no-fund"], {
    cwd,
    env,
    encoding: "utf8",
    timeout: 280_000,
  });
  expect(run.status, `npm ${args.join(" ")}:\n${run.stdout}${run.stderr}`.slice(-4000)).toBe(0);
  // npm prints the scripts it runs as "> better-sqlite3@… install"; none runs.
  expect(run.stdout + run.stderr).not.toMatch(/node-gyp|gyp (info|ERR)|> better-sqlite3@/);
}

/** The .node file better-sqlite3 loads under the Node running these tests. */
function loadedBinary(project: string, env: Record<string, string>): string {
  const out = execFileSync(
    "node",
    [
      "-e",
      `const db = require("better-sqlite3")(":memory:");
       db.prepare("select 1").get();
       console.log(Object.keys(require.cache).filter((p) => p.endsWith(".node")).join("\\n"));`,
    ],
    { cwd: project, env, encoding: "utf8" },
  );
  return out.trim();
}

describe("installing with no compiler, no nodedir and an empty home", () => {
  const machine = bareMachine(join(dir, "machine"));

  it("has no toolchain on its PATH and no npm settings of this machine's user", () => {
    const found = spawnSync("sh", ["-c", `command -v ${TOOLCHAIN_PROGRAMS.join(" ")}`], {
      env: machine.env,
      encoding: "utf8",
    });
    expect(found.stdout).toBe("");
    expect(Object.keys(machine.env).filter((k) => /^npm_config_(?!cafile$)/i.test(k))).toEqual([]);
    const nodedir = execFileSync("npm", ["config", "get", "nodedir"], {
      cwd: dir,
      env: machine.env,
      encoding: "utf8",
    });
    expect(nodedir.trim()).toBe("undefined");
  });

  it("npm ci, then npm install, build nothing; better-sqlite3 loads its shipped binary", () => {
    const project = slice("project");
    npm(["ci"], project, machine.env);
    const sqlite = join(project, "node_modules", "better-sqlite3");
    expect(existsSync(join(sqlite, "build"))).toBe(false);
    expect(loadedBinary(project, machine.env)).toBe(
      join(sqlite, "prebuilds", `${process.platform}-${process.arch}.node`),
    );

    // `npm install` (the README's start command) on the same tree, its cache now warm.
    npm(["install"], project, machine.env);
    expect(existsSync(join(sqlite, "build"))).toBe(false);
    expect(loadedBinary(project, machine.env)).toBe(
      join(sqlite, "prebuilds", `${process.platform}-${process.arch}.node`),
    );
  }, 300_000);
});
