import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { lifecycleWorkload, runScenario, scaled, sleep } from "../harness/index.ts";

describe("chaos: SQLite busy under several worker processes", () => {
  it("lets no SQLITE_BUSY reach a job while another process holds the write lock", async () => {
    let locks = 0;
    const result = await runScenario({
      name: "7 sqlite busy: 4 workers + an outside writer holding the lock 1 s in 3",
      cluster: { workers: 4, workerConcurrency: 16 },
      workload: (shops) => lifecycleWorkload({ orders: scaled(200), shops, seed: 7 }),
      drive: { concurrency: 24, retry: true, ratePerSecond: 80 },
      async fault({ cluster, done, note }) {
        // An outside writer (a backup, the CLI, a migration) holds SQLite's write lock.
        const db = new BetterSqlite3(join(cluster.dir, "connector.sqlite"));
        db.pragma("busy_timeout = 5000");
        try {
          while (!done()) {
            await sleep(2_000);
            db.exec("BEGIN IMMEDIATE");
            await sleep(1_000);
            db.exec("COMMIT");
            locks++;
          }
        } finally {
          db.close();
        }
        note(`write lock held for 1 s by an outside process ${locks} times`);
      },
    });
    const workerLogs = result.logs.filter((l) => l.name.startsWith("worker"));
    const lines = workerLogs.flatMap((l) => l.text.split("\n"));
    const failures = lines.filter((line) => /SQLITE_BUSY|database is locked/i.test(line));
    console.log(
      // The first attempt of a cause is a warning, the next at debug (src/lib/failure-digest.ts).
      `  failed job attempts in worker logs: ${lines.filter((l) => /sync failed|sync of \S+ failing/.test(l)).length}, of which SQLite busy: ${failures.length}`,
    );
    expect(locks).toBeGreaterThan(0);
    expect(failures).toEqual([]);
    expect(result.report.lost).toEqual([]);
    expect(result.report.duplicated).toEqual([]);
    expect(result.report.wrong).toEqual([]);
    expect(result.deadLetters).toEqual([]);
    expect(result.leaks).toEqual([]);
  });
});
