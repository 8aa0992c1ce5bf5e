import { afterEach, describe, expect, it } from "vitest";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";
import { type PostgresHandle, startPostgres } from "../helpers/postgres.ts";
import { standInOrder } from "../helpers/standin-orders.ts";

const order = (id: number) => standInOrder(id, "2026-11-01T10:00:00-05:00").payload;

let pipeline: Pipeline | undefined;
let postgres: PostgresHandle | undefined;
afterEach(async () => {
  await pipeline?.close();
  await postgres?.stop();
});

describe("a Postgres outage", () => {
  it("is waited out like a Redis one: jobs retry until Postgres is back, nothing lost or doubled", async () => {
    // A server of its own: this test kills it.
    postgres = await startPostgres();
    pipeline = await startPipeline({
      workers: 2,
      env: {
        DATABASE_URL: postgres.url,
        SYNC_ATTEMPTS: "40",
        DATABASE_STATEMENT_TIMEOUT_MS: "2000",
      },
    });
    const p = pipeline;
    expect((await p.send("orders/create", order(6_100_001))).status).toBe(200);
    await p.drain();

    const ready = async () => {
      const res = await p.web.app.request("/readyz");
      return { status: res.status, body: await res.json() };
    };
    // The check names the database in use (it said "sqlite" on Postgres too).
    expect(await ready()).toEqual({
      status: 200,
      body: { ready: true, checks: { redis: true, postgres: true } },
    });

    await postgres.kill();
    expect(await ready()).toEqual({
      status: 503,
      body: { ready: false, checks: { redis: true, postgres: false } },
    });
    // The receiver keeps answering from Redis (the shop's status is cached); the jobs fail on
    // the database and are retried.
    for (const id of [6_100_002, 6_100_003, 6_100_004]) {
      expect((await p.send("orders/create", order(id))).status).toBe(200);
    }
    // The workers have tried the new orders and failed on the database: their attempts are over.
    await expect
      .poll(
        async () =>
          (await p.ctx.queues.sync.getJobs(["delayed", "failed", "wait", "prioritized"])).filter(
            (job) => job.attemptsMade >= 1,
          ).length,
        { timeout: 20_000 },
      )
      .toBeGreaterThanOrEqual(1);
    expect(p.sandbox.state.orders.find(1001, "6100002")).toBeUndefined();
    await postgres.restart();
    await p.drain(60_000);

    for (const id of ["6100001", "6100002", "6100003", "6100004"]) {
      expect(p.sandbox.state.orders.find(1001, id)).toBeDefined();
      expect(
        (await p.ctx.links.getOrderLinkRow("lifecycle-shop.myshopify.com", id))?.lastResult,
      ).toBe("synced");
    }
    expect(p.sandbox.state.admittedFor(1001)).toHaveLength(4);
    expect(await p.ctx.queues.deadLetter.count()).toBe(0);
  }, 120_000);
});
