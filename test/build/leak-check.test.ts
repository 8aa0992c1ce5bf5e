import { spawn } from "node:child_process";
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

it("fails a run that leaves processes behind, names them and kills them", async () => {
  // A run of its own, in a process group of its own, under the suite's leak check.
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/vitest/vitest.mjs"),
      "run",
      "--config",
      join(ROOT, "test/fixtures/leaky/vitest.config.ts"),
    ],
    { cwd: ROOT, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  const code = await new Promise<number | null>((done) => child.once("exit", done));
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
