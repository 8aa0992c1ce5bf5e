import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

describe("chaos: Redis unreachable for 10 s", () => {
  it("answers 503 while Redis is unreachable, never a false 200, and recovers by itself", async () => {
    let pausedAt = 0;
    let resumedAt = 0;
    const result = await runScenario({
      name: "4 redis unreachable 10 s (SIGSTOP)",
      cluster: { workers: 2 },
      workload: (shops) => lifecycleWorkload({ orders: scaled(100), shops, seed: 5 }),
      drive: { concurrency: 16, retry: true, retryDelayMs: 500, ratePerSecond: 30 },
      async fault({ cluster, progress, note }) {
        while (progress() < 0.25) await sleep(100);
        // SIGSTOP: the port stays open and nothing answers, as in a network partition.
        cluster.redis.process.kill("SIGSTOP");
        pausedAt = Date.now();
        await sleep(10_000);
        cluster.redis.process.kill("SIGCONT");
        resumedAt = Date.now();
        note("redis-server stopped (SIGSTOP) for 10 s, then continued (SIGCONT)");
      },
    });
    const attempts = result.records.flatMap((r) => r.timeline);
    // Sent after the pause began and answered before it ended: Redis could not have stored it.
    const duringPause = attempts.filter((a) => a.sentAt > pausedAt + 50 && a.at < resumedAt);
    const falseOk = duringPause.filter((a) => a.code === 200).length;
    const unavailable = duringPause.filter((a) => a.code === 503).length;
    const firstOkAfter = Math.min(
      ...attempts.filter((a) => a.code === 200 && a.sentAt >= resumedAt).map((a) => a.at),
    );
    console.log(
      `  attempts during the pause: ${duringPause.length} (503: ${unavailable}, 200: ${falseOk}); first 200 ${firstOkAfter - resumedAt} ms after Redis came back`,
    );
    expect(unavailable).toBeGreaterThan(0);
    expect(falseOk).toBe(0);
    expect(Number.isFinite(firstOkAfter)).toBe(true);
    expect(result.figures.answered200).toBe(result.figures.events);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  });
});
