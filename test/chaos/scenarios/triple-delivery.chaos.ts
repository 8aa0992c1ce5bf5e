import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled } from "../harness/index.ts";

describe("chaos: every webhook delivered three times at once", () => {
  it("has one effect per webhook", async () => {
    const result = await runScenario({
      name: "6 every webhook delivered 3× at once",
      cluster: { workers: 3 },
      workload: (shops) => lifecycleWorkload({ orders: scaled(100), shops, seed: 1 }),
      drive: { concurrency: 12, retry: true, copies: 3 },
    });
    expect(result.figures.attempts).toBeGreaterThanOrEqual(result.figures.events * 3);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  });
});
