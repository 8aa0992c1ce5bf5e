import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { nextPause } from "../../src/lib/backoff.ts";
import { freePort } from "../../src/lib/redis-server.ts";
import { waitForRedis } from "../../src/lib/redis-wait.ts";
import { openDatabase, waitForDatabase } from "../../src/store/database.ts";

/**
 * REDIS_WAIT_MS is how long the web role waits for an unreachable Redis (and Postgres) at
 * start-up: it gives up when that time is up, not a backoff step before it (a 60 s setting gave
 * up after 46 s). Real connections to a port nobody listens on; the bound is generous, since
 * only the lower one is about the arithmetic and the machine may be busy.
 */
const logger = pino({ level: "silent" });
const SETTING_MS = 2_000;

async function elapsedUntilGivenUp(wait: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await expect(wait()).rejects.toThrow(/is unreachable \(ECONNREFUSED\) after \d+ s/);
  return performance.now() - started;
}

describe("the start-up wait for Redis and Postgres", () => {
  it("gives up on an unreachable Redis once REDIS_WAIT_MS is up, not before", async () => {
    const closed = await freePort();
    const elapsed = await elapsedUntilGivenUp(() =>
      waitForRedis(`redis://127.0.0.1:${closed}`, { logger, giveUpAfterMs: SETTING_MS }),
    );
    expect(elapsed).toBeGreaterThanOrEqual(SETTING_MS);
    expect(elapsed).toBeLessThan(SETTING_MS + 5_000);
  });

  it("gives up on an unreachable Postgres once the same wait is up, not before", async () => {
    const closed = await freePort();
    const db = openDatabase(`postgres://connector@127.0.0.1:${closed}/connector`, { poolSize: 1 });
    try {
      const elapsed = await elapsedUntilGivenUp(() =>
        waitForDatabase(db, { logger, giveUpAfterMs: SETTING_MS }),
      );
      expect(elapsed).toBeGreaterThanOrEqual(SETTING_MS);
      expect(elapsed).toBeLessThan(SETTING_MS + 5_000);
    } finally {
      await db.close();
    }
  });

  it("cuts the last pause to what is left, so the default 60 s means 60 s", () => {
    // The backoff as the waits run it: 0.5 s doubling to 15 s.
    let waited = 0;
    let pause = 500;
    const pauses: number[] = [];
    for (;;) {
      const next = nextPause(waited, pause, 60_000);
      if (next === null) break;
      pauses.push(next);
      waited += next;
      pause = Math.min(pause * 2, 15_000);
    }
    expect(waited).toBe(60_000);
    expect(pauses).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 14_500]);
    expect(nextPause(0, 500)).toBe(500);
  });
});
