import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { SnapshotStore } from "../../src/ingest/snapshot-store.ts";
import { WebhookIngest } from "../../src/ingest/webhook-ingest.ts";
import { type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import type { SyncJobData } from "../../src/queue/jobs.ts";
import { type LiveShare, OrderQueues } from "../../src/queue/order-queues.ts";
import type { ShopDomain } from "../../src/sync/source-order.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

// A private redis-server: the command counts below are the whole server's, so no other test
// may share it.
let server: RedisServerHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const shop = "one-call-shop.myshopify.com" as ShopDomain;

function receiver(options: { separateCalls?: boolean; liveShare?: LiveShare } = {}) {
  const prefix = `t-${randomUUID()}`;
  const real = new OrderQueues(
    redis,
    prefix,
    {},
    options.liveShare ? { liveShare: options.liveShare } : {},
  );
  onTestFinished(() => real.close());
  // The separate-calls path is the one a Redis Cluster takes (no plan for one script).
  const queues = options.separateCalls
    ? new Proxy(real, {
        get(target, property) {
          if (property === "liveJobPlan") return async () => null;
          const value = Reflect.get(target, property, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      })
    : real;
  const ingest = new WebhookIngest({
    redis,
    prefix,
    snapshots: new SnapshotStore(redis, { prefix }),
    queues,
    shops: { shopStatus: async () => "active" },
    lifecycle: {
      confirmUninstalled: async () => "uninstalled" as const,
      appUninstalled: async () => {},
      shopUpdated: async () => {},
      privacy: async () => {},
    },
  });
  return { ingest, queues: real, prefix };
}

const delivery = (seq: number, eventId = `e-${seq}`) => ({
  shop,
  topic: "orders/create",
  webhookId: `w-${randomUUID()}`,
  eventId,
  triggeredAt: null,
  rawBody: JSON.stringify(orderPayload(newModelOrder(seq, 1000 + seq))),
});

/** Commands the server has run, scripts' own calls included (as bench:ingest counts them). */
async function commandsRun(): Promise<number> {
  const info = await redis.info("stats");
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1]);
}

/** Redis commands per call of `step`, over `calls` calls after one warm-up call. */
async function commandsPer(calls: number, step: (i: number) => Promise<unknown>) {
  await step(0);
  const before = await commandsRun();
  for (let i = 1; i <= calls; i++) await step(i);
  // The first INFO is counted by the second.
  return ((await commandsRun()) - before - 1) / calls;
}

/**
 * What each command ran per call of `step` over `calls` calls after one warm-up call, scripts'
 * own calls included (INFO commandstats; the statistics are reset first, so the server must be
 * this file's alone).
 */
async function breakdownPer(calls: number, step: (i: number) => Promise<unknown>) {
  await step(0);
  await redis.config("RESETSTAT");
  for (let i = 1; i <= calls; i++) await step(i);
  const info = await redis.info("commandstats");
  const perCall: Record<string, number> = {};
  for (const [, name, count] of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) {
    if (name && name !== "info" && name !== "config|resetstat")
      perCall[name] = Number(count) / calls;
  }
  return perCall;
}

const total = (perCall: Record<string, number>) =>
  Object.values(perCall).reduce((sum, n) => sum + n, 0);

describe("the receiver's one call on a single Redis", () => {
  it("costs 16 Redis commands per order webhook (19 before), 2 per duplicate", async () => {
    // A day's window: no window starts during the count (its first arrival reads the last one's).
    const { ingest, queues } = receiver({ liveShare: { limit: 100, windowMs: 86_400_000 } });
    // BullMQ's own start-up commands (its version check) come before the count.
    await Promise.all([queues.sync.waitUntilReady(), queues.deadLetter.waitUntilReady()]);
    const perWebhook = await breakdownPer(20, async (i) => {
      expect(await ingest.ingest(delivery(400 + i))).toBe("queued");
    });
    // Each command, and what runs it (see receive-order.lua): the script itself; the mark and
    // BullMQ's deduplication key (set); the snapshot's version read (hget), write (hset) and
    // expiry (pexpire); the arrival counter (incr); and BullMQ's add: job id and priority
    // counters (incr), queue meta reads (hget, hmget), job hash (hmset), prioritized set and
    // marker (zadd), 'added' and 'waiting' events (xadd).
    expect(perWebhook).toEqual({
      evalsha: 1,
      set: 2,
      hget: 2,
      hset: 1,
      pexpire: 1,
      incr: 3,
      hmget: 1,
      hmset: 1,
      zadd: 2,
      xadd: 2,
    });
    expect(total(perWebhook)).toBe(16);
    const duplicate = await commandsPer(20, async (i) => {
      expect(await ingest.ingest(delivery(400 + i))).toBe("duplicate");
    });
    expect(duplicate).toBeLessThanOrEqual(2);
  });

  it("adds the job BullMQ's add adds: same hash, options, priority, deduplication and events", async () => {
    const one = receiver();
    const two = receiver({ separateCalls: true });
    expect(await one.ingest.ingest(delivery(7))).toBe("queued");
    expect(await two.ingest.ingest(delivery(7))).toBe("queued");
    const jobOf = async (queues: OrderQueues) => {
      const [job] = await queues.sync.getJobs(["prioritized"]);
      if (!job?.id) throw new Error("no job");
      const hash = await redis.hgetall(`${queues.sync.keys[""]}${job.id}`);
      const events = await redis.xrange(`${queues.sync.keys.events}`, "-", "+");
      return {
        fields: Object.keys(hash).sort(),
        name: hash.name,
        opts: JSON.parse(hash.opts ?? "{}"),
        data: { ...(JSON.parse(hash.data ?? "{}") as SyncJobData), receivedAt: 0 },
        delay: hash.delay,
        priority: hash.priority,
        deid: hash.deid,
        deduplicatedBy: await redis.get(`${queues.sync.keys.de}:${shop}:9000000007`),
        jobIdMatches: (await redis.get(`${queues.sync.keys.de}:${shop}:9000000007`)) === job.id,
        events: events.map(([, fields]) => fields[1]),
        marker: await redis.zcard(`${queues.sync.keys.marker}`),
        waiting: await queues.sync.getJobCountByTypes("prioritized"),
      };
    };
    const viaScript = await jobOf(one.queues);
    const viaAdd = await jobOf(two.queues);
    expect({ ...viaScript, deduplicatedBy: null }).toEqual({ ...viaAdd, deduplicatedBy: null });
    expect(viaScript.jobIdMatches).toBe(true);
    expect(viaScript.opts.de).toEqual({ id: `${shop}:9000000007`, keepLastIfActive: true });
    expect(viaScript.events).toEqual(["added", "waiting"]);
  });

  it("absorbs a second order event into the waiting job, as BullMQ's deduplication does", async () => {
    const { ingest, queues } = receiver();
    const first = orderPayload(newModelOrder(8, 1008));
    const second = { ...first, updated_at: "2026-11-02T10:00:00Z", note: "changed" };
    const base = { shop, topic: "orders/updated", triggeredAt: null, eventId: null };
    expect(await ingest.ingest({ ...base, webhookId: "w-a", rawBody: JSON.stringify(first) })).toBe(
      "queued",
    );
    expect(
      await ingest.ingest({ ...base, webhookId: "w-b", rawBody: JSON.stringify(second) }),
    ).toBe("queued");
    expect(await queues.sync.count()).toBe(1);
  });

  it("queues a shop's jobs beyond its window's share as a flood (priority 3)", async () => {
    const prefix = `t-${randomUUID()}`;
    const queues = new OrderQueues(
      redis,
      prefix,
      {},
      { liveShare: { limit: 2, windowMs: 60_000 } },
    );
    onTestFinished(() => queues.close());
    const ingest = new WebhookIngest({
      redis,
      prefix,
      snapshots: new SnapshotStore(redis, { prefix }),
      queues,
      shops: { shopStatus: async () => "active" },
      lifecycle: {
        confirmUninstalled: async () => "uninstalled" as const,
        appUninstalled: async () => {},
        shopUpdated: async () => {},
        privacy: async () => {},
      },
    });
    for (let i = 1; i <= 3; i++) expect(await ingest.ingest(delivery(200 + i))).toBe("queued");
    const jobs = await queues.sync.getJobs(["prioritized"]);
    const byOrder = Object.fromEntries(jobs.map((job) => [job.data.orderId, job.priority]));
    expect(byOrder).toEqual({ "9000000201": 1, "9000000202": 1, "9000000203": 3 });
  });
});

describe("the one call for the other order events", () => {
  it("records an edit's hint, queues its job, and answers its redelivery as a duplicate", async () => {
    const { ingest, queues, prefix } = receiver();
    const edit = {
      shop,
      topic: "orders/edited",
      webhookId: "w-edit",
      eventId: "e-edit",
      triggeredAt: null,
      rawBody: JSON.stringify({
        order_edit: { id: 1, order_id: 9000000301, committed_at: "2026-11-03T10:00:00Z" },
      }),
    };
    expect(await ingest.ingest(edit)).toBe("queued");
    expect(await redis.hget(`${prefix}:snap:{${shop}:9000000301}`, "h")).toBe(
      String(Date.parse("2026-11-03T10:00:00Z")),
    );
    expect(await ingest.ingest(edit)).toBe("duplicate");
    expect(await queues.sync.count()).toBe(1);
  });

  it("answers an older delivery stale with no job, marked, and counts only queued deliveries", async () => {
    const { ingest, queues } = receiver();
    const model = newModelOrder(9, 1009);
    const older = JSON.stringify(orderPayload(model));
    model.updatedAt = "2026-11-01T16:00:00Z";
    const newer = JSON.stringify(orderPayload(model));
    const base = { shop, topic: "orders/updated", triggeredAt: null };
    expect(await ingest.ingest({ ...base, webhookId: "n", eventId: "n", rawBody: newer })).toBe(
      "queued",
    );
    await queues.sync.obliterate({ force: true });
    expect(await ingest.ingest({ ...base, webhookId: "o", eventId: "o", rawBody: older })).toBe(
      "stale",
    );
    expect(await ingest.ingest({ ...base, webhookId: "o", eventId: "o", rawBody: older })).toBe(
      "duplicate",
    );
    expect(await queues.sync.count()).toBe(0);
    // One arrival (the newer delivery's), and this one.
    expect(await queues.countLive(shop)).toBe(2);
  });

  it("counts the same arrivals on the one script and on the cluster's separate calls", async () => {
    // A day's window: the whole sequence falls in one window, so the count is exact.
    const liveShare = { limit: 100, windowMs: 86_400_000 };
    const paths = [receiver({ liveShare }), receiver({ separateCalls: true, liveShare })];
    const model = newModelOrder(11, 1011);
    const older = JSON.stringify(orderPayload(model));
    model.updatedAt = "2026-11-01T16:00:00Z";
    const newer = JSON.stringify(orderPayload(model));
    const edit = JSON.stringify({
      order_edit: { id: 2, order_id: 9000000011, committed_at: "2026-11-03T10:00:00Z" },
    });
    const base = { shop, topic: "orders/updated", triggeredAt: null };
    const sequence = [
      { ...base, webhookId: "a", eventId: "a", rawBody: newer }, // queued: counted
      { ...base, webhookId: "a", eventId: "a", rawBody: newer }, // duplicate: not counted
      { ...base, webhookId: "b", eventId: "b", rawBody: older }, // stale: not counted
      { ...base, webhookId: "c", eventId: "c", rawBody: newer }, // same version, queued: counted
      { ...base, topic: "orders/edited", webhookId: "d", eventId: "d", rawBody: edit }, // hint
      delivery(12), // another order: counted
    ];
    const outcomes = [];
    const counts = [];
    for (const path of paths) {
      const seen = [];
      for (const webhook of sequence) seen.push(await path.ingest.ingest(webhook));
      outcomes.push(seen);
      // The probe counts one more on each.
      counts.push(await path.queues.countLive(shop));
    }
    expect(outcomes[0]).toEqual(["queued", "duplicate", "stale", "queued", "queued", "queued"]);
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(counts).toEqual([5, 5]);
  });
});
