import { afterEach, describe, expect, it } from "vitest";
import { redactDeadLetters, removeShopDeadLetters } from "../../src/engine/shop-work.ts";
import { type ConnectorStatus, collectStatus, createDeadLetters } from "../../src/ops/index.ts";
import { DeadLetterIndex, indexKey } from "../../src/queue/dead-letter-index.ts";
import { DeadLetterLock, recordDeadLetter } from "../../src/queue/dead-letter-record.ts";
import type { DeadLetterData, FailureCategory } from "../../src/queue/jobs.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import { RECONNECT_HINT } from "../../src/shopify/admin-client.ts";
import { FAILURE_CATEGORIES } from "../../src/sync/failure.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, type RedisMode, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { monitorRedis } from "../helpers/redis-monitor.ts";
import { service } from "../helpers/services.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

const SHOP_B = "b-shop.myshopify.com";
const SHOP_C = "c-shop.myshopify.com";
const TOKEN_REASON = `Shopify refused the shop's access token: ${RECONNECT_HINT} to connect it again`;

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
});

/** A pipeline without sync workers: retried orders stay queued, their entries gone. */
async function quietPipeline(redis: RedisMode = "standalone") {
  pipeline = await startPipeline({ workers: 0, redis });
  return pipeline;
}

let clock = Date.UTC(2026, 10, 1);
function failure(
  shop: string,
  orderId: string | null,
  category: FailureCategory,
  reason = `${category} failure of ${orderId ?? "a payload"}`,
): DeadLetterData {
  clock += 1000;
  const at = new Date(clock).toISOString();
  return {
    shop,
    orderId,
    topic: "orders/updated",
    reason,
    category,
    errorClass: "Terminal",
    request: { method: "POST", path: "/orders", body: { note: "x".repeat(2_000) } },
    response: { status: 400, requestId: "req", body: { code: "validation_error" } },
    attempts: 1,
    firstFailedAt: at,
    lastFailedAt: at,
  };
}

/** Recorded as the worker records a failure (the index written beside the entry). */
async function record(p: Pipeline, data: DeadLetterData, discriminator?: string) {
  const id = deadLetterId(data.shop, data.orderId, discriminator);
  await p.ctx.queues.addDeadLetter(id, data);
  return id;
}

/** Recorded as a connector before the index did: the job alone. */
async function recordBeforeIndex(p: Pipeline, data: DeadLetterData) {
  const id = deadLetterId(data.shop, data.orderId);
  await p.ctx.queues.deadLetter.add("dead-letter", data, { jobId: id, removeOnComplete: true });
  return id;
}

/** Every entry, read in full from the queue: what the reads must agree with. */
async function fullRead(p: Pipeline) {
  const jobs = await p.ctx.queues.deadLetter.getJobs(["waiting"], 0, -1, true);
  return jobs.filter((j) => j?.id).map((j) => ({ ...(j.data as DeadLetterData), id: j.id }));
}

const sorted = (ids: (string | undefined)[]) => [...ids].sort();

async function expectReadsAgreeWithFullRead(p: Pipeline) {
  const dlq = createDeadLetters(p.ctx);
  const all = await fullRead(p);
  for (const shop of [undefined, TEST_SHOP, SHOP_B, SHOP_C]) {
    const of = all.filter((e) => !shop || e.shop === shop);
    const byReason: Record<string, number> = {};
    for (const e of of) byReason[e.category] = (byReason[e.category] ?? 0) + 1;
    expect(await dlq.countByReason(shop), `counts of ${shop ?? "every shop"}`).toEqual({
      total: of.length,
      byReason,
    });
  }
  for (const reason of FAILURE_CATEGORIES) {
    const ids = all.filter((e) => e.category === reason).map((e) => e.id);
    expect(sorted(await dlq.matchingIds({ reason })), `matching ${reason}`).toEqual(sorted(ids));
    const page = await dlq.list({ reason }, { limit: 500 });
    expect(page.total).toBe(ids.length);
    expect(sorted(page.entries.map((e) => e.id))).toEqual(sorted(ids));
    for (const e of page.entries) expect(e.category).toBe(reason);
  }
  const token = all.filter((e) => e.reason.includes(RECONNECT_HINT));
  const byText = await dlq.list({ shop: SHOP_B, reasonIncludes: RECONNECT_HINT }, { limit: 500 });
  expect(sorted(byText.entries.map((e) => e.id))).toEqual(
    sorted(token.filter((e) => e.shop === SHOP_B).map((e) => e.id)),
  );
  expect(sorted(await dlq.matchingIds({ reasonIncludes: RECONNECT_HINT }))).toEqual(
    sorted(token.map((e) => e.id)),
  );
  // Newest first, as before, and the same page a full read gives.
  const newest = await dlq.list({ reason: "config" }, { limit: 2 });
  expect(newest.entries.map((e) => e.id)).toEqual(
    all
      .filter((e) => e.category === "config")
      .map((e) => e.id)
      .reverse()
      .slice(0, 2),
  );
}

const hasRow = async (p: Pipeline, id: string) =>
  (await p.ctx.redis.hexists(indexKey(p.ctx.prefix), id)) === 1;

describe("dead-letter reads from the index", { timeout: 120_000 }, () => {
  // On a Redis Cluster too: the index's keys share a slot, for its MULTI, script and pipeline.
  it.for(["standalone", "cluster"] as const)(
    "count and filter as a full read does, through every way an entry changes or leaves (%s)",
    async (redis) => {
      const p = await quietPipeline(redis);
      const dlq = createDeadLetters(p.ctx);
      // Recorded before the index existed: no row until a read fills it in.
      const old = [
        await recordBeforeIndex(p, failure(SHOP_B, "901", "config", TOKEN_REASON)),
        await recordBeforeIndex(p, failure(SHOP_C, "902", "mapping")),
        await recordBeforeIndex(p, failure(TEST_SHOP, "903", "provider-validation")),
      ];
      for (const id of old) expect(await hasRow(p, id)).toBe(false);

      const retried = [];
      for (const n of [11, 12, 13, 14]) {
        const orderId = String(5_600_000 + n);
        await p.ctx.snapshots.storeOrder(
          sourceOrder({ shop: TEST_SHOP as ShopDomain, id: orderId as ShopifyOrderId }),
        );
        retried.push(await record(p, failure(TEST_SHOP, orderId, "provider-validation")));
      }
      const discarded = await record(p, failure(TEST_SHOP, "21", "link-mismatch"));
      const resolved = await record(p, failure(TEST_SHOP, "22", "provider-conflict"));
      const body = orderPayload(shippedOrder(5_600_031));
      const payload = await record(
        p,
        {
          ...failure(TEST_SHOP, null, "payload"),
          topic: "orders/create",
          webhookId: "wh-31",
          rawPayload: JSON.stringify(body),
        },
        "wh-31",
      );
      const ofB = [
        await record(p, failure(SHOP_B, "41", "config", TOKEN_REASON)),
        await record(p, failure(SHOP_B, "42", "config", "the shop has no location mapping")),
        await record(p, failure(SHOP_B, "43", "mapping")),
      ];
      await record(p, failure(SHOP_C, "51", "provider-conflict"));
      await record(p, failure(SHOP_C, "52", "exhausted"));
      // A second failure of an order under another category: the entry moves to it.
      const moved = await record(p, failure(SHOP_C, "53", "provider-validation"));
      await record(p, failure(SHOP_C, "53", "config", TOKEN_REASON));
      expect((await dlq.countByReason(SHOP_C)).byReason).toEqual({
        mapping: 1,
        "provider-conflict": 1,
        exhausted: 1,
        config: 1,
      });
      await expectReadsAgreeWithFullRead(p);
      // The first read filled the rows of the entries recorded before the index.
      for (const id of old) expect(await hasRow(p, id)).toBe(true);
      expect(await hasRow(p, moved)).toBe(true);

      // Every way an entry leaves the queue takes its row with it.
      expect((await dlq.retry(retried[0] as string)).result).toBe("queued");
      expect(await hasRow(p, retried[0] as string)).toBe(false);
      expect((await dlq.retry(payload)).result).toBe("reingested");
      expect(await hasRow(p, payload)).toBe(false);
      expect(await dlq.discard(discarded)).toBe("discarded");
      expect(await hasRow(p, discarded)).toBe(false);
      expect(await p.ctx.queues.resolveDeadLetter(TEST_SHOP, "22")).toBe(true);
      expect(await hasRow(p, resolved)).toBe(false);
      await expectReadsAgreeWithFullRead(p);

      const bulk = await dlq.retryMatching({ shop: TEST_SHOP, reason: "provider-validation" });
      // The entry recorded before the index has no stored order to sync: it stays.
      expect(bulk).toMatchObject({ matched: 4, retried: 3, skipped: 1 });
      for (const id of retried) expect(await hasRow(p, id)).toBe(false);
      // A privacy request takes the bodies and leaves what the index holds as it was.
      expect(
        await redactDeadLetters(
          p.ctx.queues.deadLetter,
          p.ctx,
          { shop: SHOP_C, orderIds: ["53"], needles: [] },
          new Date().toISOString(),
        ),
      ).toBe(1);
      expect((await p.ctx.queues.deadLetter.getJob(moved))?.data).toMatchObject({
        category: "config",
        redactedAt: expect.any(String),
        request: { method: "POST", path: "/orders" },
      });
      expect((await p.ctx.queues.deadLetter.getJob(moved))?.data.request).not.toHaveProperty(
        "body",
      );
      expect(await hasRow(p, moved)).toBe(true);
      expect(await removeShopDeadLetters(p.ctx.queues.deadLetter, p.ctx, SHOP_B)).toBe(4);
      for (const id of [...ofB, old[0] as string]) expect(await hasRow(p, id)).toBe(false);
      await expectReadsAgreeWithFullRead(p);
      // Nothing left in the index but the rows of queued entries.
      const queued = (await fullRead(p)).map((e) => e.id);
      expect(sorted(await p.ctx.redis.hkeys(indexKey(p.ctx.prefix)))).toEqual(sorted(queued));
    },
  );

  it("reads an entry in full when a write of it stopped halfway, and sweeps rows of entries gone", async () => {
    const p = await quietPipeline();
    const dlq = createDeadLetters(p.ctx);
    const index = new DeadLetterIndex(p.ctx.redis, p.ctx.prefix);
    const queue = p.ctx.queues.deadLetter;
    const a = await record(p, failure(SHOP_B, "61", "provider-validation"));
    const b = await record(p, failure(SHOP_B, "62", "provider-validation"));
    const c = await record(p, failure(SHOP_B, "63", "provider-validation"));
    const d = await record(p, failure(SHOP_B, "64", "mapping"));
    const e = await record(p, failure(SHOP_B, "65", "mapping"));

    // A writer that died after writing the entry, before its row: its mark stays.
    await index.writing(a);
    const job = await queue.getJob(a);
    await job?.updateData({ ...(job.data as DeadLetterData), category: "config" });
    // One that died before writing anything.
    await index.writing(b);
    // A remover that died between the row and the job: the entry stays, without its row.
    await index.forget([c]);
    // A writer that could not get the entry's lock (a retry held it) records without it.
    const lock = new DeadLetterLock(p.ctx.redis, p.ctx.prefix);
    const token = await lock.acquire(d);
    await recordDeadLetter(
      queue,
      p.ctx.redis,
      p.ctx.prefix,
      d,
      failure(SHOP_B, "64", "exhausted"),
      0,
    );
    await lock.release(d, token as string);
    // A job gone with its row left behind (a read filled it in as the entry was removed).
    await (await queue.getJob(e))?.remove();
    expect(await hasRow(p, e)).toBe(true);

    for (let read = 0; read < 2; read++) {
      expect(await dlq.countByReason(SHOP_B)).toEqual({
        total: 4,
        byReason: { config: 1, "provider-validation": 2, exhausted: 1 },
      });
      await expectReadsAgreeWithFullRead(p);
    }
    // Entries whose write did not finish stay read in full (their rows never trusted); the one
    // without a row has it again; the row of the entry gone was swept by a count of the queue.
    expect((await index.read([a, b, d])).map((r) => r.state)).toEqual([
      "writing",
      "writing",
      "writing",
    ]);
    expect(await hasRow(p, c)).toBe(true);
    expect(await hasRow(p, e)).toBe(false);

    // A later write leaves the mark of the one that died: the entry is still read in full…
    await record(p, failure(SHOP_B, "62", "mapping"));
    expect((await index.read([b])).map((r) => r.state)).toEqual(["writing"]);
    // …until it leaves the queue; recorded again, it has its row.
    await dlq.discard(b);
    await record(p, failure(SHOP_B, "62", "mapping"));
    expect(await index.read([b])).toEqual([
      { state: "row", row: { shop: SHOP_B, category: "mapping", reason: "mapping failure of 62" } },
    ]);
  });

  it("redacts an entry after a failure being recorded meanwhile, keeping that failure", async () => {
    const p = await quietPipeline();
    const index = new DeadLetterIndex(p.ctx.redis, p.ctx.prefix);
    const queue = p.ctx.queues.deadLetter;
    const id = await record(p, failure(SHOP_B, "71", "provider-validation"));
    // A worker records the order's next failure and holds the entry's lock while it does.
    const lock = new DeadLetterLock(p.ctx.redis, p.ctx.prefix);
    const token = await lock.acquire(id);
    let lockRequests = 0;
    const monitor = await monitorRedis(service("redisUrl"), ({ args }) => {
      if (args[0]?.toLowerCase() === "set" && args[1]?.endsWith(`:dlq:lock:${id}`)) lockRequests++;
    });
    const redaction = redactDeadLetters(
      queue,
      p.ctx,
      { shop: SHOP_B, orderIds: ["71"], needles: [] },
      new Date().toISOString(),
    );
    try {
      // The redaction read the entry, found it matches, and waits for the lock.
      await expect.poll(() => lockRequests).toBeGreaterThanOrEqual(2);
    } finally {
      monitor.stop();
    }
    // The worker's write, as recordDeadLetter makes it, then the lock freed.
    const newer = { ...failure(SHOP_B, "71", "config", TOKEN_REASON), attempts: 2 };
    await index.writing(id);
    await (await queue.getJob(id))?.updateData(newer);
    await index.written(id, newer);
    await lock.release(id, token as string);
    expect(await redaction).toBe(1);

    const entry = (await queue.getJob(id))?.data;
    expect(entry).toMatchObject({
      category: "config",
      attempts: 2,
      redactedAt: expect.any(String),
      request: { method: "POST", path: "/orders" },
    });
    expect(entry?.request).not.toHaveProperty("body");
    expect(entry?.response).not.toHaveProperty("body");
    await expectReadsAgreeWithFullRead(p);
  });

  it("counts and filters without reading every entry in full", async () => {
    const p = await quietPipeline();
    const dlq = createDeadLetters(p.ctx);
    const N = 120;
    for (let i = 0; i < N; i++) {
      await record(
        p,
        failure(i % 2 ? SHOP_B : SHOP_C, String(7_000 + i), i % 3 ? "config" : "mapping"),
      );
    }
    const old = [];
    for (let i = 0; i < 30; i++)
      old.push(await recordBeforeIndex(p, failure(SHOP_B, String(8_000 + i), "exhausted")));

    // Redis's own log of commands: each entry the connector reads in full is one HGETALL of its
    // job that it sends (BullMQ's scripts read jobs inside Redis too: not sent anywhere).
    let fullReads = 0;
    const jobKey = `${p.ctx.prefix}:dead-letter:`;
    const markers = new Set<string>();
    const monitor = await monitorRedis(service("redisUrl"), ({ args, source }) => {
      if (source !== "lua" && args[0]?.toLowerCase() === "hgetall" && args[1]?.startsWith(jobKey))
        fullReads++;
      if (args[0]?.toLowerCase() === "get" && args[1]?.startsWith(`${jobKey}marker-`))
        markers.add(args[1]);
    });
    // A marker command after a read: once the log shows it, it shows every command before it.
    let n = 0;
    const settled = async () => {
      const marker = `${jobKey}marker-${n++}`;
      await p.ctx.redis.get(marker);
      await expect.poll(() => markers.has(marker)).toBe(true);
    };
    const reads = async (read: () => Promise<unknown>) => {
      await settled();
      const before = fullReads;
      await read();
      await settled();
      return fullReads - before;
    };
    try {
      // The first read after an upgrade reads the entries recorded before the index, once.
      expect(await reads(() => dlq.countByReason())).toBe(old.length);
      expect(await reads(() => dlq.countByReason())).toBe(0);
      expect(await reads(() => dlq.countByReason(SHOP_B))).toBe(0);
      expect(await reads(() => dlq.matchingIds({ reason: "config" }))).toBe(0);
      // `connector status`: the counts, and the dead-letter queue's oldest entry, read alone.
      const oldest = Math.min(
        ...(await p.ctx.queues.deadLetter.getJobs(["waiting"], 0, -1)).map((j) => j.timestamp),
      );
      const before = Date.now();
      let status: ConnectorStatus | undefined;
      expect(
        await reads(async () => {
          status = await collectStatus(p.ctx);
        }),
      ).toBe(1);
      const after = Date.now();
      expect(status?.deadLetters.total).toBe(N + old.length);
      const dead = status?.queues.find((q) => q.name === "dead-letter");
      expect(dead?.oldestIsApproximate).toBe(false);
      expect(dead?.oldestPendingAgeMs).toBeGreaterThanOrEqual(before - oldest);
      expect(dead?.oldestPendingAgeMs).toBeLessThanOrEqual(after - oldest);
      // A filtered list reads its page in full, no more.
      expect(await reads(() => dlq.list({ reason: "config" }, { limit: 10 }))).toBe(10);
      expect(await reads(() => dlq.list({ reasonIncludes: "mapping failure" }, { limit: 5 }))).toBe(
        5,
      );
      // A privacy request reads its shop's entries once each (and the one it changes again,
      // under its lock); removing a shop's entries reads none.
      const redacted = await redactDeadLetters(
        p.ctx.queues.deadLetter,
        p.ctx,
        { shop: SHOP_C, orderIds: ["7000"], needles: [] },
        new Date().toISOString(),
      );
      expect(redacted).toBe(1);
      expect(
        await reads(() =>
          redactDeadLetters(
            p.ctx.queues.deadLetter,
            p.ctx,
            { shop: SHOP_C, orderIds: ["7002"], needles: [] },
            new Date().toISOString(),
          ),
        ),
      ).toBe(N / 2 + 1);
      expect(await reads(() => removeShopDeadLetters(p.ctx.queues.deadLetter, p.ctx, SHOP_C))).toBe(
        0,
      );
      expect(await dlq.countByReason()).toMatchObject({ total: N / 2 + old.length });
    } finally {
      monitor.stop();
    }
  });
});
