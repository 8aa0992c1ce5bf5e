import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";
import { MOCKING_TESTS } from "./vitest.unit.config.ts";

/**
 * Files whose assertions are about the limiter's real clock (Redis TIME) over windows of one or
 * two seconds, or about how fast an answer reaches a sender: they run last, one at a time, with
 * nothing else competing for the CPU. Every other file runs three at a time at least (vitest's
 * default on a two-core machine is one): most of a file's time is spent waiting on the
 * processes it starts.
 */
const TIMED = [
  "test/engine/limiter/**/*.test.ts",
  "test/engine/budget-feeder.test.ts",
  "test/integration/throttle.test.ts",
  "test/integration/rate-limited-create.test.ts",
  "test/queue/queue-fairness.test.ts",
  "test/queue/live-arrivals.test.ts",
  "test/bench/benches.test.ts",
  // The probe judges its 40 MB upload by how much was sent before the refusal reached it, and
  // @hono/node-server reads a refused body on after the answer (up to 64 MB, to reuse the
  // connection): with another file beside it the answer can come late enough to count as read.
  "test/security/probe.security.test.ts",
];
const PARALLEL_FILES = Math.max(3, availableParallelism());
const INCLUDE = ["test/**/*.test.ts", "test/**/*.test.tsx"];
// Fixtures are run by the tests that need them, under a config of their own.
const EXCLUDE = [...configDefaults.exclude, "test/fixtures/**"];

export default defineConfig({
  test: {
    // The leak check first: its teardown runs last, after the workers and the shared servers.
    globalSetup: ["test/helpers/leak-check.ts", "test/helpers/global-setup.ts"],
    // In a `*.unit.test.*` file, starting a process fails with the unit tier's rule, as in
    // `npm run test:unit` (vitest.unit.config.ts).
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
          name: "suite",
          include: INCLUDE,
          exclude: [...EXCLUDE, ...TIMED, ...MOCKING_TESTS],
          // A worker's files share its modules: the connector's ~450 are loaded once per worker
          // instead of once per file, a third of the run's CPU. So a file leaves no shared
          // object changed behind it, and one that replaces a module (vi.mock) runs with a
          // module graph of its own (MOCKING_TESTS, the next project).
          isolate: false,
          maxWorkers: PARALLEL_FILES,
          // Three files at once on two cores: a file that starts several processes may wait for
          // the CPU. Its own deadlines poll; these only stop a test that hangs.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "mocking",
          include: MOCKING_TESTS,
          exclude: EXCLUDE,
          maxWorkers: PARALLEL_FILES,
        },
      },
      {
        extends: true,
        test: {
          name: "timed",
          include: TIMED,
          exclude: EXCLUDE,
          fileParallelism: false,
          // One worker runs them all in turn, on one module graph, after the groups above.
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
