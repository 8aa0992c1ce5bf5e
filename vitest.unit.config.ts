import { configDefaults, defineConfig } from "vitest/config";

/**
 * The unit tier (`npm run test:unit`): the `*.unit.test.ts(x)` files, which need no service: no
 * Redis, PostgreSQL, Chromium, child process or bundled CLI. Its global setup starts nothing
 * (only the leak check), so a unit test that reaches for a service gets one line with the
 * tier's rule (`test/helpers/services.ts`, `test/helpers/unit-tier.ts`). `npm test` runs these
 * files too, beside everything else.
 */
export const UNIT_TESTS = ["test/**/*.unit.test.ts", "test/**/*.unit.test.tsx"];

/**
 * Test files that replace a module with `vi.mock`, in either tier: they get a fresh module graph
 * of their own. The others share one per worker (`isolate: false`, here and in the full run):
 * loading the shared modules again for every file was half the unit tier's time and a third of
 * the full run's CPU (test/build/unit-tier.test.ts keeps this list whole).
 */
export const MOCKING_TESTS = ["test/security/signature-compare.security.unit.test.ts"];

/** The tier's settings for these files (test/build/unit-tier.test.ts runs its fixtures so). */
export function unitTier(files: { include: string[]; mocking?: string[]; exclude?: string[] }) {
  const exclude = [...configDefaults.exclude, ...(files.exclude ?? [])];
  const mocking = files.mocking ?? [];
  return defineConfig({
    test: {
      globalSetup: ["test/helpers/leak-check.ts"],
      setupFiles: ["test/helpers/unit-tier.ts"],
      testTimeout: 30_000,
      hookTimeout: 30_000,
      pool: "forks",
      // A poll waits as long as a loaded two-core machine may need (Vitest gives up after 1 s);
      // one whose condition holds ends at once (test/build/poll-patience.unit.test.ts).
      expect: { poll: { timeout: 20_000 } },
      reporters: ["default", "./test/helpers/summary-reporter.ts"],
      projects: [
        {
          extends: true,
          test: {
            name: "unit",
            include: files.include,
            exclude: [...exclude, ...mocking],
            isolate: false,
          },
        },
        ...(mocking.length > 0
          ? [{ extends: true, test: { name: "unit-mocking", include: mocking, exclude } }]
          : []),
      ],
    },
  });
}

export default unitTier({
  include: UNIT_TESTS,
  mocking: MOCKING_TESTS.filter((file) => /\.unit\.test\.tsx?$/.test(file)),
  // Fixtures are run by the tests that need them, under a config of their own.
  exclude: ["test/fixtures/**"],
});
