import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { type SweepWorkerHandle, startSweepWorker } from "../../src/jobs/sweep-worker.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";
import { type PostgresHandle, startPostgres } from "../helpers/postgres.ts";

let pipeline: Pipeline | undefined;
let sweeps: SweepWorkerHandle | undefined;
let postgres: PostgresHandle | undefined;
afterEach(async () => {
  await sweeps?.close();
  await pipeline?.close();
  await postgres?.stop();
  sweeps = pipeline = postgres = undefined;
});

/**
 * The sweep worker looks every minute for shops installed or uninstalled meanwhile. While
 * Postgres was away it wrote a warning at every look, each saying "Failed query: select "shop",
 * "status", … from "shops" params: " and no cause: a line a minute for as long as the outage
 * lasted, beside the outage's own line that names DATABASE_URL and the fix.
 */
describe("the sweep worker's refresh while Postgres is away", () => {
  it("is said once with its cause, the attempts after at debug, and once when it works again", async () => {
    postgres = await startPostgres();
    pipeline = await startPipeline({ workers: 0, env: { DATABASE_URL: postgres.url } });
    const lines: { level: string; msg: string; err?: { message: string } }[] = [];
    pipeline.ctx.logger = createLogger(
      "debug",
      new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split("\n").filter(Boolean))
            lines.push(JSON.parse(line));
          done();
        },
      }),
    );
    sweeps = await startSweepWorker(pipeline.ctx, { rescheduleEveryMs: 50 });
    const refreshLines = () => lines.filter((l) => l.msg.startsWith("sweep schedulers not"));

    await postgres.kill();
    await expect.poll(() => refreshLines().length, { timeout: 20_000 }).toBeGreaterThanOrEqual(4);
    const said = refreshLines().filter((l) => l.level !== "debug");
    expect(said).toHaveLength(1);
    expect(said[0]?.level).toBe("warn");
    expect(said[0]?.err?.message).toMatch(/ECONNREFUSED|terminat|Connection terminated/);
    expect(said[0]?.err?.message).not.toContain("Failed query");

    await postgres.restart();
    await expect
      .poll(() => lines.some((l) => /^sweep schedulers refreshed again after \d+ s$/.test(l.msg)), {
        timeout: 20_000,
      })
      .toBe(true);
  }, 60_000);
});
