import { describe, expect, it } from "vitest";
import { fulfilledOrdersWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

describe("chaos: provider faults from the sandbox", () => {
  it("loses and duplicates nothing through 500s, timeouts, dropped answers and 429 storms; recovery costs under 10% more calls", async () => {
    let storms = 0;
    const result = await runScenario({
      name: "5 provider chaos (5% 500, 2% timeouts, 1% dropped after commit, 429 storms)",
      cluster: {
        workers: 2,
        rateLimit: 300,
        rateWindowMs: 1_000,
        env: { PROVIDER_TIMEOUT_MS: "2000" },
      },
      workload: (shops) => fulfilledOrdersWorkload({ orders: scaled(200), shops, seed: 6 }),
      drive: { concurrency: 16, retry: true, ratePerSecond: 50 },
      async fault({ cluster, done, note }) {
        await cluster.setFaults({
          errorRate: 0.05,
          slowRate: 0.02,
          // Longer than the connector's PROVIDER_TIMEOUT_MS: the request times out, and the
          // sandbox still commits it afterwards.
          slowMs: 3_000,
          dropAfterCommitRate: 0.01,
          extra429Rate: 0.01,
          seed: 6,
        });
        while (!done()) {
          await sleep(3_000);
          // Another client spends the whole budget of every store: a storm of real 429s.
          for (const { storeId } of cluster.shops) await cluster.consumeBudget(storeId, 300);
          storms++;
        }
        note(`${storms} 429 storms (every store's budget spent by another client)`);
      },
    });
    const { providerCalls, faultedCalls, providerMinimum } = result.figures;
    // Each faulted request is a call whatever the client does; what the connector adds to
    // recover (resends, the lookup before resending an ambiguous create) is what it controls.
    const recovery = (providerCalls - faultedCalls) / providerMinimum;
    expect(result.figures.faultsInjected).toBeGreaterThan(0);
    expect(result.figures.provider429).toBeGreaterThan(0);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
    expect(faultedCalls).toBeGreaterThan(0);
    expect(recovery).toBeLessThanOrEqual(1.1);
  });
});
