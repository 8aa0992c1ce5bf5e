import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
    // Fixtures are run by the tests that need them, under a config of their own.
    exclude: [...configDefaults.exclude, "test/fixtures/**"],
    // The leak check first: its teardown runs last, after the workers and the shared servers.
    globalSetup: ["test/helpers/leak-check.ts", "test/helpers/global-setup.ts"],
    // In a `*.unit.test.*` file, starting a process fails with the unit tier's rule, as in
    // `npm run test:unit` (vitest.unit.config.ts).
    setupFiles: ["test/helpers/unit-tier.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
