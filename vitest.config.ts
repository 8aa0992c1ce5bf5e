import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
    // The leak check first: its teardown runs last, after the workers and the shared servers.
    globalSetup: ["test/helpers/leak-check.ts", "test/helpers/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    reporters: ["default", "./test/helpers/summary-reporter.ts"],
  },
});
