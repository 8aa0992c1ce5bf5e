import { relative, resolve } from "node:path";
import { expect, inject } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** The rule of the unit tier (`npm run test:unit`), as a test that breaks it is told. */
export const UNIT_TIER_RULE = "unit tests need no service: name it *.test.ts";

/** A file of the unit tier: `*.unit.test.ts(x)`. */
export const UNIT_TEST_FILE = /\.unit\.test\.tsx?$/;

/** The test file running in this worker, relative to the repository (or "" outside a test). */
export function currentTestFile(): string {
  const path = expect.getState().testPath;
  return path ? relative(ROOT, path) : "";
}

/** Whether the running test file belongs to the unit tier. */
export function inUnitTest(): boolean {
  return UNIT_TEST_FILE.test(currentTestFile());
}

/** The error a unit test gets when it reaches for a service: one line, with the rule. */
export function unitTierError(what: string): Error {
  const file = currentTestFile() || "a unit test";
  return new Error(`${UNIT_TIER_RULE} (${file} reaches for ${what})`);
}

/**
 * A service the full run's global setup started (`test/helpers/global-setup.ts`): the one door
 * through which tests and helpers reach the run's Redis, Redis Cluster, PostgreSQL, bundled CLI
 * and bundled connector process. A `*.unit.test.*` file, or any file run by the unit tier (whose
 * global setup starts nothing), gets the tier's rule instead of a connection that hangs.
 */
export function service(
  name: "redisUrl" | "redisClusterNodes" | "postgresUrl" | "cliBundle" | "mainBundle",
): string {
  const value = inject(name) as string | undefined;
  if (value === undefined || inUnitTest()) throw unitTierError(name);
  return value;
}
