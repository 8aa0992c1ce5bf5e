import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, sleep } from "./harness/index.ts";

/**
 * The CI-size slice of the fault suite that runs with `npm test`: real processes, a worker and
 * the web process each killed with SIGKILL mid-run. The full suite is `npm run test:chaos`
 * (CHAOS_SCALE sizes it); RELIABILITY.md has its figures.
 */
describe("chaos smoke (real processes)", () => {
  it("loses and duplicates nothing when a worker and the web process are killed mid-run", async () => {
    let kills = 0;
    const result = await runScenario({
      name: "smoke: worker and web kill -9",
      cluster: { workers: 2 },
      workload: (shops) => lifecycleWorkload({ orders: 60, shops, seed: 11, firstSeq: 500 }),
      drive: { concurrency: 8, retry: true, retryDelayMs: 200, ratePerSecond: 40 },
      async fault({ cluster, progress, note }) {
        while (progress() < 0.3) await sleep(50);
        await cluster.killWorker(0);
        kills++;
        const restart = cluster.startWorker();
        while (progress() < 0.6) await sleep(50);
        await cluster.web.kill("SIGKILL");
        kills++;
        await cluster.startWeb();
        await restart;
        note("one worker and the web process killed with SIGKILL, each restarted");
      },
    });
    expect(kills).toBe(2);
    expect(result.figures.answered200).toBe(result.figures.events);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  }, 240_000);
});
