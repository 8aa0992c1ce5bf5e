import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** vitest's own variables, which would make the child think it runs inside this run. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(VITEST|TEST$|NODE_ENV$)/.test(key)) env[key] = value;
  }
  return { ...env, NO_COLOR: "1", FORCE_COLOR: "0" };
}

it("counts files that fail to set up or to load as failures in the closing line", () => {
  const run = spawnSync(
    process.execPath,
    [
      join(ROOT, "node_modules/vitest/vitest.mjs"),
      "run",
      "--config",
      join(ROOT, "test/fixtures/failing-hook/vitest.config.ts"),
    ],
    { cwd: ROOT, env: cleanEnv(), encoding: "utf8", timeout: 60_000 },
  );
  const lines = run.stdout.trimEnd().split("\n");
  // The closing line, alone on the last line, as CI reads it.
  expect(lines.at(-1)).toBe("tests: 1 passed, 2 failed, 1 skipped");
  expect(lines.at(-1)).toMatch(/^(\w+: )?\d+ passed, \d+ failed(, \d+ skipped)?$/);
  expect(run.stdout).toContain("failed files: 2");
  expect(run.stdout).toContain("failing-hook.fixture.ts (set-up failed on purpose)");
  expect(run.stdout).toContain("import-error.fixture.ts (this module fails to load on purpose)");
  expect(run.status).toBe(1);
});
