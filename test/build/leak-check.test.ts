import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, it } from "vitest";
import { listProcesses } from "../helpers/processes.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** vitest's own variables, which would make the child think it runs inside this run. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(VITEST|TEST$|NODE_ENV$)/.test(key)) env[key] = value;
  }
  return { ...env, NO_COLOR: "1", FORCE_COLOR: "0" };
}

/** A vitest run of one fixture under the leak check, its output, and its exit code. */
function fixtureRun(fixture: string, options: { detached: boolean; env?: NodeJS.ProcessEnv }) {
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/vitest/vitest.mjs"),
      "run",
      "--config",
      join(ROOT, "test/fixtures/leak-check/vitest.config.ts"),
      fixture,
    ],
    {
      cwd: ROOT,
      env: { ...cleanEnv(), ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.detached,
    },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  const exited = new Promise<number | null>((done) => child.once("exit", done));
  return { output: () => out, exited };
}

it("fails a run that leaves processes behind, names them and kills them", async () => {
  // A run of its own, in a process group of its own, under the suite's leak check.
  const run = fixtureRun("leaks.fixture.ts", { detached: true });
  const code = await run.exited;
  const out = run.output();
  const leaked = /leaked (\d+) (\d+)/.exec(out);
  expect(leaked, out).not.toBeNull();
  const [below, detached] = [Number(leaked?.[1]), Number(leaked?.[2])];
  expect(code).toBe(1);
  expect(out).toContain("2 process(es) started by this run were still running at its end");
  expect(out).toMatch(new RegExp(`pid ${below}: sleep 301`));
  expect(out).toMatch(new RegExp(`pid ${detached}: sleep 302 \\(in .*/connector-test-run-`));
  // And they are gone.
  const alive = listProcesses().filter((info) => info.pid === below || info.pid === detached);
  expect(alive.map((info) => info.command)).toEqual([]);
});

it("in a run started in the process group of another, leaves the other run's processes alone", async () => {
  // As test/build/unit-tier.test.ts starts a run under the unit tier's leak check: in this
  // run's process group. What this run starts meanwhile (a test worker of it) is in the same
  // group, started during the inner run and none of the inner run's: its leak check killed it,
  // and this run reported a worker ended by SIGTERM. So too an orphan of this run.
  const dir = mkdtempSync(join(tmpdir(), "bystander-"));
  const run = fixtureRun("waits.fixture.ts", {
    detached: false,
    env: { BYSTANDER_DIR: dir },
  });
  let child: ChildProcess | undefined;
  let orphan: number | undefined;
  try {
    await expect.poll(() => existsSync(join(dir, "started")), { timeout: 60_000 }).toBe(true);
    child = spawn("sleep", ["303"], { stdio: "ignore" });
    // A shell that starts `sleep 304` and exits: the sleep is left to the machine's reaper.
    const shell = spawnSync("sh", ["-c", "sleep 304 >/dev/null 2>&1 & echo $!"], {
      encoding: "utf8",
    });
    orphan = Number(shell.stdout.trim());
    expect(listProcesses().find((info) => info.pid === orphan)?.command).toBe("sleep 304");
    const gone = new Promise((done) => child?.once("exit", done));
    writeFileSync(join(dir, "go"), "");
    const code = await run.exited;
    expect(run.output()).not.toContain("still running at its end");
    expect(code, run.output()).toBe(0);
    expect(child.signalCode).toBeNull();
    const alive = listProcesses().filter((info) => info.pid === child?.pid || info.pid === orphan);
    expect(alive.map((info) => info.command).sort()).toEqual(["sleep 303", "sleep 304"]);
    child.kill("SIGKILL");
    await gone;
  } finally {
    child?.kill("SIGKILL");
    if (orphan) {
      try {
        process.kill(orphan, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await run.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});
