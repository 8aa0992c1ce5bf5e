import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

/**
 * Redis killed with SIGKILL and restarted on its AOF, under load. SIGKILL of the process keeps
 * what Redis had written to the kernel; it does not model a power loss, where `everysec` may
 * lose the last second of acknowledged writes (RELIABILITY.md says so).
 */
describe.each(["everysec", "always"] as const)(
  "chaos: Redis kill -9 and restart, appendfsync %s",
  (appendfsync) => {
    it("keeps every webhook answered 200 across the restart", async () => {
      let restarts = 0;
      const result = await runScenario({
        name: `3 redis kill -9 + restart (appendfsync ${appendfsync})`,
        cluster: { workers: 2, appendfsync },
        workload: (shops) => lifecycleWorkload({ orders: scaled(200), shops, seed: 4 }),
        drive: { concurrency: 16, retry: true, retryDelayMs: 250, ratePerSecond: 60 },
        async fault({ cluster, progress, note }) {
          for (const at of [0.3, 0.7]) {
            while (progress() < at) await sleep(100);
            await cluster.redis.stop("SIGKILL");
            await sleep(1_000);
            await cluster.startRedis();
            restarts++;
          }
          note(`redis-server killed with SIGKILL and restarted on its AOF ${restarts} times`);
        },
      });
      expect(restarts).toBe(2);
      expect(result.figures.answered200).toBe(result.figures.events);
      expect(result.report.lost).toEqual([]);
      expect(result.report.duplicated).toEqual([]);
      expect(result.report.wrong).toEqual([]);
      expect(result.deadLetters).toEqual([]);
      expect(result.leaks).toEqual([]);
    });
  },
);
