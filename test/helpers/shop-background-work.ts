import { expect } from "vitest";
import {
  BackfillQueue,
  BackfillRepository,
  SweepScheduler,
  sweepSchedulerId,
} from "../../src/backfill/index.ts";
import type { Pipeline } from "./pipeline.ts";

/**
 * A shop's background work as an installed shop has it (a sweep schedule, a backfill with its
 * job queued), to check that an uninstall stops it. `close` must run after the test.
 */
export async function startShopBackgroundWork(p: Pipeline, shop: string) {
  const backfills = new BackfillRepository(p.ctx.db);
  const backfillQueue = new BackfillQueue(p.ctx.redis, p.ctx.prefix, backfills);
  const sweeps = new SweepScheduler(p.ctx.redis, p.ctx.prefix, 60_000);
  await sweeps.schedule(shop);
  const { backfill } = await backfillQueue.start(shop, { since: "2026-10-01T00:00:00Z" });
  expect(await backfillQueue.queue.getJobCounts("waiting")).toMatchObject({ waiting: 1 });
  return {
    /** The sweep schedule is gone, the queued backfill job dropped, the backfill paused. */
    async expectStopped() {
      expect(await sweeps.queue.getJobScheduler(sweepSchedulerId(shop))).toBeUndefined();
      expect(await backfillQueue.queue.getJobCounts("waiting")).toMatchObject({ waiting: 0 });
      expect((await backfills.get(backfill.id))?.status).toBe("paused");
    },
    async close() {
      await backfillQueue.close();
      await sweeps.close();
    },
  };
}
