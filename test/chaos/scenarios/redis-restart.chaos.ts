import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

/**
 * Redis killed with SIGKILL and restarted on its AOF, under load.
 *
 * With `appendfsync always` Redis writes and fsyncs the AOF before it answers, so every webhook
 * answered 200 survives. With `everysec` it answers first; while a background fsync is slow it
 * even postpones the write itself for up to 2 s, so a kill of the Redis process (not only a
 * power loss) can drop writes it already acknowledged. The everysec run therefore checks that
 * every loss lies in that window: an event answered 200 less than 2.5 s before a kill.
 */
const WINDOW_MS = 2_500;

describe.each(["always", "everysec"] as const)(
  "chaos: Redis kill -9 and restart, appendfsync %s",
  (appendfsync) => {
    it(
      appendfsync === "always"
        ? "keeps every webhook answered 200 across the restart"
        : "loses at most the writes acknowledged in the 2 s before a kill, and duplicates nothing",
      async () => {
        let restarts = 0;
        const result = await runScenario({
          name: `3 redis kill -9 + restart (appendfsync ${appendfsync})`,
          cluster: { workers: 2, appendfsync },
          workload: (shops) => lifecycleWorkload({ orders: scaled(150), shops, seed: 4 }),
          drive: { concurrency: 16, retry: true, retryDelayMs: 250, ratePerSecond: 60 },
          async fault({ cluster, progress, note, mark }) {
            for (const at of [0.3, 0.7]) {
              while (progress() < at) await sleep(100);
              mark("redis kill -9");
              await cluster.redis.stop("SIGKILL");
              await sleep(1_000);
              await cluster.startRedis();
              mark("redis restarted");
              restarts++;
            }
            note(`redis-server killed with SIGKILL and restarted on its AOF ${restarts} times`);
          },
        });
        expect(restarts).toBe(2);
        expect(result.figures.answered200).toBe(result.figures.events);
        expect(result.report.duplicated).toEqual([]);
        expect(result.deadLetters).toEqual([]);
        expect(result.leaks).toEqual([]);
        const damaged = [...result.report.lost, ...result.report.wrong.map((w) => w.sourceOrderId)];
        if (appendfsync === "always") {
          expect(damaged).toEqual([]);
          return;
        }
        const kills = result.faultLog.filter((f) => f.text === "redis kill -9").map((f) => f.at);
        const inWindow = (id: string) =>
          result.records.some(
            (r) =>
              r.event.sourceOrderId === id &&
              r.ackedAt !== null &&
              kills.some(
                (k) => k - (r.ackedAt as number) >= 0 && k - (r.ackedAt as number) < WINDOW_MS,
              ),
          );
        console.log(`  orders damaged with everysec: ${damaged.length}`);
        expect(damaged.filter((id) => !inWindow(id))).toEqual([]);
      },
    );
  },
);
