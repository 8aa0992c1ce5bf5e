import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

describe("chaos: worker processes killed with SIGKILL", () => {
  it("baseline: with no fault every order reaches the provider once, in its latest state", async () => {
    const result = await runScenario({
      name: "0 baseline (no fault)",
      cluster: { workers: 3 },
      workload: (shops) => lifecycleWorkload({ orders: scaled(100), shops, seed: 1 }),
      drive: { concurrency: 16, retry: true },
    });
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  });

  it("loses and duplicates nothing when a worker is killed every few seconds", async () => {
    let kills = 0;
    const result = await runScenario({
      name: "1 worker kill -9 every 2 s",
      cluster: { workers: 3 },
      workload: (shops) => lifecycleWorkload({ orders: scaled(200), shops, seed: 2 }),
      // Spread over ~20 s (CHAOS_SCALE=1) so that several kills land mid-run.
      drive: { concurrency: 16, retry: true, ratePerSecond: 60 },
      async fault({ cluster, done, note }) {
        // At most two replacements starting at once: the number of processes stays bounded
        // however slowly they start on a loaded machine.
        const starting = new Set<Promise<unknown>>();
        while (!done()) {
          await sleep(2_000);
          if (starting.size >= 2) await Promise.race(starting);
          if (done()) break;
          const victim = await cluster.killWorker(kills);
          if (!victim) continue;
          kills++;
          // The orchestrator restarts it, as docker-compose's `restart: unless-stopped` does.
          const restart: Promise<unknown> = cluster
            .startWorker()
            .finally(() => starting.delete(restart));
          starting.add(restart);
        }
        await Promise.all(starting);
        note(`${kills} worker processes killed with SIGKILL, each replaced by a new one`);
      },
    });
    expect(kills).toBeGreaterThan(0);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  });
});
