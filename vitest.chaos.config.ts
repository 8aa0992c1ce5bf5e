import { defineConfig } from "vitest/config";

/**
 * The fault suite (`npm run test:chaos`): real processes, one scenario at a time (each starts
 * its own redis-server, sandbox, web and worker processes). CHAOS_SCALE sizes every scenario.
 */
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.chaos.ts"],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: "forks",
    fileParallelism: false,
    reporters: ["default"],
  },
});
