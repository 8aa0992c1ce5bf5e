import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

describe("chaos: the web process killed with SIGKILL under webhook load", () => {
  it("loses no webhook that was answered 200 before a kill", async () => {
    const kills: number[] = [];
    const result = await runScenario({
      name: "2 web kill -9 every 3 s",
      cluster: { workers: 2 },
      workload: (shops) => lifecycleWorkload({ orders: scaled(200), shops, seed: 3 }),
      drive: { concurrency: 24, retry: true, retryDelayMs: 200, ratePerSecond: 80 },
      async fault({ cluster, done, note }) {
        while (!done()) {
          await sleep(3_000);
          if (done()) break;
          kills.push(Date.now());
          await cluster.web.kill("SIGKILL");
          await sleep(300);
          await cluster.startWeb();
        }
        note(`${kills.length} web processes killed with SIGKILL, each restarted`);
      },
    });
    const ackedBeforeAKill = result.records.filter(
      (r) => r.ackedAt !== null && kills.some((k) => (r.ackedAt as number) < k),
    ).length;
    const cutOff = result.records.reduce((n, r) => n + r.statuses.filter((s) => s === 0).length, 0);
    console.log(
      `  answered 200 before a kill: ${ackedBeforeAKill}; attempts cut off by a kill: ${cutOff}`,
    );
    expect(kills.length).toBeGreaterThan(0);
    expect(cutOff).toBeGreaterThan(0);
    expect(result.figures.answered200).toBe(result.figures.events);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  });
});
