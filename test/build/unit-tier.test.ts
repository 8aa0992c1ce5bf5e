import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createVitest } from "vitest/node";
import unitConfig, { MOCKING_TESTS } from "../../vitest.unit.config.ts";
import { UNIT_TEST_FILE } from "../helpers/services.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** The test files a config picks up, as vitest itself resolves them (nothing is run). */
async function filesOf(config: string): Promise<string[]> {
  const vitest = await createVitest("test", {
    config: join(ROOT, config),
    root: ROOT,
    watch: false,
  });
  try {
    const specs = await vitest.globTestSpecifications();
    return [...new Set(specs.map((spec) => relative(ROOT, spec.moduleId)))].sort();
  } finally {
    await vitest.close();
  }
}

/** Every test file under test/, outside its fixtures (paths from the root). */
function allTestFiles(): string[] {
  return readdirSync(join(ROOT, "test"), { recursive: true, encoding: "utf8" })
    .map((path) => join("test", path))
    .filter((file) => /\.test\.tsx?$/.test(file) && !file.startsWith("test/fixtures/"))
    .sort();
}

/** Every `*.unit.test.ts(x)` among them. */
function unitTestFiles(): string[] {
  return allTestFiles().filter((file) => /\.unit\.test\.tsx?$/.test(file));
}

/** vitest's own variables, which would make the child think it runs inside this run. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(VITEST|TEST$|NODE_ENV$)/.test(key)) env[key] = value;
  }
  return { ...env, NO_COLOR: "1", FORCE_COLOR: "0" };
}

describe("the unit tier (npm run test:unit)", () => {
  it("picks up every *.unit.test.* file and nothing else; npm test runs them too", async () => {
    const unitFiles = unitTestFiles();
    expect(unitFiles.length).toBeGreaterThan(20);
    const tier = await filesOf("vitest.unit.config.ts");
    expect(tier).toEqual(unitFiles);
    expect(tier.filter((file) => !UNIT_TEST_FILE.test(file))).toEqual([]);
    const full = await filesOf("vitest.config.ts");
    expect(unitFiles.filter((file) => !full.includes(file))).toEqual([]);
  }, 60_000);

  it("starts no service: only the leak check runs before it, and npm needs none for it", () => {
    expect(unitConfig.test?.globalSetup).toEqual(["test/helpers/leak-check.ts"]);
    const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts;
    expect(scripts["test:unit"]).toBe(
      "exec node scripts/with-node.mjs vitest run --config vitest.unit.config.ts",
    );
  });

  it("gives a file of its own module graph to each test that mocks a module, in either tier", () => {
    const mocking = allTestFiles().filter((file) =>
      /\bvi\.(mock|doMock)\(/.test(readFileSync(join(ROOT, file), "utf8")),
    );
    expect(mocking.sort()).toEqual([...MOCKING_TESTS].sort());
  });

  it("fails a unit test that reaches for a service with one line naming the rule, in both tiers", () => {
    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, "node_modules/vitest/vitest.mjs"),
        "run",
        "--config",
        join(ROOT, "test/fixtures/unit-tier/vitest.config.ts"),
      ],
      { cwd: ROOT, env: cleanEnv(), encoding: "utf8", timeout: 60_000 },
    );
    const out = run.stdout + run.stderr;
    const rule = "unit tests need no service: name it *.test.ts";
    const lines = out.split("\n").filter((line) => line.includes(rule));
    const redis = `Error: ${rule} (test/fixtures/unit-tier/reaches-for-redis.unit.test.ts reaches for redisUrl)`;
    const spawn = `Error: ${rule} (test/fixtures/unit-tier/starts-a-process.unit.test.ts reaches for a child process (redis-server))`;
    // Each failure once under the unit tier's settings and once under the full run's.
    expect(lines.filter((line) => line === redis)).toHaveLength(2);
    expect(lines.filter((line) => line === spawn)).toHaveLength(2);
    expect(run.stdout.trimEnd().split("\n").at(-1)).toBe("tests: 2 passed, 4 failed, 0 skipped");
    expect(run.status).toBe(1);
  }, 60_000);
});
