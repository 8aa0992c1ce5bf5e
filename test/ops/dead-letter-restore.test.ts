import { type Logger, pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { SWEEP_JOB, SweepScheduler } from "../../src/backfill/index.ts";
import {
  type DeadLetterRestoreDeps,
  restoreDeadLetters,
  restoreKey,
} from "../../src/ops/dead-letter-restore.ts";
import { createDeadLetters } from "../../src/ops/index.ts";
import { retiredKey } from "../../src/queue/dead-letter-record.ts";
import type { DeadLetterData } from "../../src/queue/jobs.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { runCli } from "../helpers/cli.ts";
import { maintenanceWorker } from "../helpers/maintenance-worker.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { DEPLOYMENTS, type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { loseRedisData } from "../helpers/redis-loss.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

let pipeline: Pipeline | undefined;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await pipeline?.close();
  pipeline = undefined;
});

const ORDERS = [5_560_001, 5_560_002, 5_560_003];

/**
 * Three orders dead-lettered (the provider refuses the mapped fulfillment location), the
 * second one's entry discarded by the operator; then Redis comes back empty.
 */
async function deadLetteredThenRedisLost(deployment: Partial<(typeof DEPLOYMENTS)[number]> = {}) {
  const p = await startPipeline({
    sandbox: { fulfillmentLocations: { 1001: [77] } },
    ...(deployment.redis ? { redis: deployment.redis } : {}),
    ...(deployment.database ? { database: deployment.database } : {}),
  });
  pipeline = p;
  await p.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 78 } });
  const standIn = p.shopify.state.shop(TEST_SHOP);
  for (const id of ORDERS) {
    const payload = orderPayload(shippedOrder(id));
    // Shopify has them too: a retry after the loss reads the order from it.
    standIn?.putOrder(payload);
    await p.send("orders/create", payload);
  }
  await p.drain();
  const before = new Map<string, DeadLetterData>();
  for (const id of ORDERS) {
    const entry = await p.ctx.queues.deadLetter.getJob(deadLetterId(TEST_SHOP, String(id)));
    expect(entry, `order ${id} dead-lettered`).toBeDefined();
    before.set(String(id), entry?.data as DeadLetterData);
  }
  expect(await createDeadLetters(p.ctx).discard(deadLetterId(TEST_SHOP, "5560002"))).toBe(
    "discarded",
  );
  // The discarded entry's order is still dead-lettered: not at the provider, counted as such,
  // and left alone by the sweep until it changes in Shopify.
  expect((await p.ctx.links.countByResult(TEST_SHOP)).deadLettered).toBe(3);
  expect(await p.ctx.links.lastFailure(TEST_SHOP, "5560002")).toBe("dead-lettered");
  expect(await p.ctx.checkpoints.deadLetteredAt(TEST_SHOP, "5560002")).toEqual(expect.any(String));
  await loseRedisData(p.ctx.redis, p.ctx.prefix);
  expect(await p.ctx.queues.deadLetter.count()).toBe(0);
  return { p, before };
}

/** What the sweep hands the restore, from the pipeline's context. */
const restoreDeps = (p: Pipeline, logger: Logger): DeadLetterRestoreDeps => ({
  links: p.ctx.links,
  queues: p.ctx.queues,
  redis: p.ctx.redis,
  prefix: p.ctx.prefix,
  logger,
});

const entryOf = async (p: Pipeline, orderId: string) =>
  (await p.ctx.queues.deadLetter.getJob(deadLetterId(TEST_SHOP, orderId)))?.data as
    | DeadLetterData
    | undefined;

describe.each(DEPLOYMENTS)("dead letters after Redis lost them ($name)", (deployment) => {
  it("are made again by the shop's next sweep, except the one the operator discarded", {
    timeout: 120_000,
  }, async () => {
    const { p, before } = await deadLetteredThenRedisLost(deployment);

    await maintenanceWorker(p.ctx, (close) => closers.push(close));
    const sweeps = new SweepScheduler(p.ctx.redis, p.ctx.prefix, 60_000);
    closers.push(() => sweeps.close());
    const sweep = await sweeps.queue.add(SWEEP_JOB, { shop: TEST_SHOP });
    const deadline = Date.now() + 60_000;
    while ((await sweeps.queue.getJobState(sweep.id as string)) !== "completed") {
      if (Date.now() > deadline) throw new Error("the shop's sweep did not complete");
      await new Promise((r) => setTimeout(r, 20));
    }

    for (const id of ["5560001", "5560003"]) {
      const lost = before.get(id);
      expect(await entryOf(p, id)).toMatchObject({
        shop: TEST_SHOP,
        orderId: id,
        category: "provider-validation",
        reason: lost?.reason,
        fields: [{ path: "fulfillmentLocationId" }],
        restoredAt: expect.any(String),
      });
    }
    expect(await entryOf(p, "5560002")).toBeUndefined();
    expect(await p.ctx.redis.get(restoreKey(p.ctx.prefix, TEST_SHOP))).toBe("done");

    const shown = await runCli(p.ctx, ["dlq", "show", deadLetterId(TEST_SHOP, "5560001")]);
    expect(shown.stderr).toBe("");
    expect(shown.stdout).toContain("after Redis lost the entry");

    // The cause fixed, the restored entry is retried as any other: the order is read from
    // Shopify (its snapshot went with Redis) and its fulfillment reaches the provider.
    await p.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 77 } });
    const retried = await createDeadLetters(p.ctx).retry(deadLetterId(TEST_SHOP, "5560001"));
    expect(retried.result).toBe("queued");
    await p.drain();
    expect(p.sandbox.state.orders.find(1001, "5560001")?.fulfillments).toHaveLength(1);
    expect(await entryOf(p, "5560001")).toBeUndefined();
  });
});

describe("the restore of a shop's dead letters", { timeout: 120_000 }, () => {
  it("goes on from where the last sweep stopped, and costs one read once done", async () => {
    const { p } = await deadLetteredThenRedisLost();
    const logs = captureLogs("restore");
    closers.push(async () => logs.remove());
    const deps = restoreDeps(p, pino({ level: "info" }, logs.destination));
    // One read of one per sweep: the first makes 5560001, the next (past the discarded 5560002)
    // 5560003.
    const one = { batch: 1, batches: 1 };
    expect(await restoreDeadLetters(deps, TEST_SHOP, one)).toBe(1);
    expect(await p.ctx.redis.get(restoreKey(p.ctx.prefix, TEST_SHOP))).toBe("5560001");
    expect(await entryOf(p, "5560003")).toBeUndefined();
    expect(await restoreDeadLetters(deps, TEST_SHOP, one)).toBe(1);
    expect(await restoreDeadLetters(deps, TEST_SHOP, one)).toBe(0);
    expect(await p.ctx.redis.get(restoreKey(p.ctx.prefix, TEST_SHOP))).toBe("done");
    expect(await p.ctx.queues.deadLetter.count()).toBe(2);
    const lines = logs.read().trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain("dead letters restored from the database: Redis had lost them");

    // Done: a second restore reads nothing, even with an entry gone again.
    await p.ctx.queues.deadLetter.remove(deadLetterId(TEST_SHOP, "5560001"));
    expect(await restoreDeadLetters(deps, TEST_SHOP)).toBe(0);
  });

  it("reads on within a sweep, up to its number of reads", async () => {
    const { p } = await deadLetteredThenRedisLost();
    const logs = captureLogs("restore-reads");
    closers.push(async () => logs.remove());
    const deps = restoreDeps(p, pino({ level: "info" }, logs.destination));
    // Reads of one: the first makes 5560001, the second reads the discarded 5560002's place
    // past it and makes 5560003, the third finds the end.
    expect(await restoreDeadLetters(deps, TEST_SHOP, { batch: 1, batches: 2 })).toBe(2);
    expect(await p.ctx.redis.get(restoreKey(p.ctx.prefix, TEST_SHOP))).toBe("5560003");
    expect(await restoreDeadLetters(deps, TEST_SHOP, { batch: 1, batches: 2 })).toBe(0);
    expect(await p.ctx.redis.get(restoreKey(p.ctx.prefix, TEST_SHOP))).toBe("done");
    expect(await p.ctx.queues.deadLetter.count()).toBe(2);
    // One line for the sweep that restored both, none for the one that found the end.
    expect(logs.read().trim().split("\n")).toEqual([expect.stringContaining('"restored":2')]);
  });

  it("leaves no entry for an order that synced while the entries were made", async () => {
    const { p } = await deadLetteredThenRedisLost();
    const deps = restoreDeps(p, pino({ level: "silent" }));
    // 5560001's sync ends just after the restore read its failure record: the sync marks the
    // order synced and finds no entry to resolve, as none is written yet.
    deps.links = {
      lastFailure: (shop, orderId) => p.ctx.links.lastFailure(shop, orderId),
      deadLetteredFailures: async (shop, after, limit) => {
        const rows = await p.ctx.links.deadLetteredFailures(shop, after, limit);
        await p.ctx.links.markSynced(TEST_SHOP, "5560001", "2026-11-28T00:00:00Z");
        expect(await p.ctx.queues.resolveDeadLetter(TEST_SHOP, "5560001")).toBe(false);
        return rows;
      },
    };
    expect(await restoreDeadLetters(deps, TEST_SHOP)).toBe(1);
    expect(await entryOf(p, "5560001")).toBeUndefined();
    expect(await entryOf(p, "5560003")).toBeDefined();
    expect(await p.ctx.queues.deadLetter.count()).toBe(1);
  });

  it("leaves out an order whose retry is in flight", async () => {
    // A Redis that kept its data but not the restore's mark (the first sweep after this
    // version's upgrade): an order an operator retried has no entry while its sync is queued,
    // only the history the retry keeps for it.
    const { p } = await deadLetteredThenRedisLost();
    const deps = restoreDeps(p, pino({ level: "silent" }));
    const retried = deadLetterId(TEST_SHOP, "5560001");
    await p.ctx.redis.set(retiredKey(p.ctx.prefix, retried), JSON.stringify({ retries: 1 }));
    expect(await restoreDeadLetters(deps, TEST_SHOP)).toBe(1);
    expect(await entryOf(p, "5560001")).toBeUndefined();
    expect(await entryOf(p, "5560003")).toBeDefined();
  });
});
