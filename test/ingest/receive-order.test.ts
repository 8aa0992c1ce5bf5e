import { createHash, randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { addPrioritizedJob } from "bullmq/dist/cjs/scripts/addPrioritizedJob-9.js";
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

/** BullMQ 6.7.0's addPrioritizedJob, which src/ingest/lua/add-live-job.lua follows. */
const ADD_PRIORITIZED_JOB_SHA1 = "299880da0f75f0b376ee8e87d20eae62f964ac5e";

// A private redis-server: the command counts below are the whole server's, so no other test
// may share it.
let server: RedisServerHandle;
let redis: Redis;
/** BullMQ's workers want a connection that retries for ever. */
let workerRedis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  workerRedis = new Redis(server.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  redis?.disconnect();
  workerRedis?.disconnect();
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
  it("costs 12 Redis commands per new order's webhook (15 before), 11 for a kept order, 2 per duplicate", async () => {
    // A day's window: no window starts during the count (its first arrival reads the last one's).
    const { ingest, queues } = receiver({ liveShare: { limit: 100, windowMs: 86_400_000 } });
    // BullMQ's own start-up commands (its version check) come before the count.
    await Promise.all([queues.sync.waitUntilReady(), queues.deadLetter.waitUntilReady()]);
    const perWebhook = await breakdownPer(20, async (i) => {
      expect(await ingest.ingest(delivery(400 + i))).toBe("queued");
    });
    // Each command, and what runs it (see receive-order.lua): the script itself; the snapshot's
    // read (hmget: the version, the marks, its expiry moment and job stamp), write (hset: the
    // part, the mark, the stamp) and a new hash's expiry (pexpire); the arrival counter (incr);
    // and BullMQ's add (add-live-job.lua): deduplication key (set), job hash (hmset), priority
    // counter (incr), prioritized set and marker (zadd), 'added' and 'waiting' events (xadd).
    expect(perWebhook).toEqual({
      evalsha: 1,
      hmget: 1,
      hset: 1,
      pexpire: 1,
      incr: 2,
      set: 1,
      hmset: 1,
      zadd: 2,
      xadd: 2,
    });
    expect(total(perWebhook)).toBe(12);
    const duplicate = await commandsPer(20, async (i) => {
      expect(await ingest.ingest(delivery(400 + i))).toBe("duplicate");
    });
    expect(duplicate).toBeLessThanOrEqual(2);
    // A later event of each order (its job done): its snapshot is kept, with more than half its
    // lifetime left, so its expiry is not renewed.
    await queues.sync.obliterate({ force: true });
    const later = await breakdownPer(20, async (i) => {
      const model = newModelOrder(400 + i, 1400 + i);
      model.updatedAt = "2026-11-02T10:00:00Z";
      const rawBody = JSON.stringify(orderPayload(model));
      const webhook = { ...delivery(400 + i, `u-${i}`), topic: "orders/updated", rawBody };
      expect(await ingest.ingest(webhook)).toBe("queued");
    });
    expect(later.pexpire).toBeUndefined();
    expect(total(later)).toBe(11);
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
        // The id ends in the stamp, from each run's clock (its form is checked below).
        opts: { ...JSON.parse(hash.opts ?? "{}"), jobId: "" },
        idForm: job.id.replace(/\|\d{13}$/, "|S"),
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
    expect(viaScript.idForm).toBe(`${shop}|9000000007|S`);
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
    const { ingest, queues } = receiver({ liveShare: { limit: 2, windowMs: 60_000 } });
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

/**
 * Every key of the queue, in a form two runs can be compared in: key names without the run's
 * prefix, times (finished jobs' scores too) and lock tokens as placeholders, the job data's receipt time zeroed, streams
 * without their entry ids, and whether each key expires.
 */
async function queueDump(queues: OrderQueues, prefix: string) {
  const keys = (await redis.keys(`${prefix}:sync:*`)).sort();
  const dump: Record<string, unknown> = {};
  const TIMES = new Set(["timestamp", "processedOn", "finishedOn", "ats"]);
  for (const key of keys) {
    const name = key.slice(prefix.length);
    const expires = (await redis.pttl(key)) > 0;
    const type = await redis.type(key);
    let value: unknown;
    if (name.endsWith(":lock")) value = "token";
    else if (type === "string") value = await redis.get(key);
    else if (type === "hash") {
      const hash = await redis.hgetall(key);
      for (const field of Object.keys(hash)) if (TIMES.has(field)) hash[field] = "T";
      if (hash.data) hash.data = JSON.stringify({ ...JSON.parse(hash.data), receivedAt: 0 });
      value = hash;
    } else if (type === "zset") {
      // A finished job's score is its finishing time.
      const timed = name.endsWith(":completed") || name.endsWith(":failed");
      value = timed
        ? await redis.zrange(key, "0", "-1")
        : await redis.call("ZRANGE", key, 0, -1, "WITHSCORES");
    } else if (type === "list") value = await redis.lrange(key, 0, -1);
    else if (type === "stream") value = (await redis.xrange(key, "-", "+")).map(([, f]) => f);
    else value = type;
    dump[name] = { expires, value };
  }
  expect(queues.sync.keys[""]).toBe(`${prefix}:sync:`);
  // The receiver's job ids end in the order's stamp, taken from the clock: numbered by rank
  // within the order (two orders written in the same millisecond share a clock reading).
  const text = JSON.stringify(dump);
  const JOB_STAMP = /\|(\d+)\|(\d{13,})/g;
  const stamps = new Map<string, Set<string>>();
  for (const [, order = "", stamp = ""] of text.matchAll(JOB_STAMP)) {
    stamps.set(order, (stamps.get(order) ?? new Set()).add(stamp));
  }
  const numbered = text.replace(JOB_STAMP, (_, order: string, stamp: string) => {
    const rank = [...(stamps.get(order) ?? [])].sort().indexOf(stamp) + 1;
    return `|${order}|S${rank}`;
  });
  return JSON.parse(numbered) as Record<string, unknown>;
}

describe("the one script's add is BullMQ's add, key for key", () => {
  /**
   * Runs `scenario` on the one script and on BullMQ's add (the cluster's path) and compares the
   * queue's keys at each `checkpoint` and at the end; answers the one script's last dump.
   */
  async function both(
    scenario: (
      run: ReturnType<typeof receiver>,
      worker: Worker,
      checkpoint: () => Promise<void>,
    ) => Promise<void>,
    options: { unlike?: string[] } = {},
  ) {
    const dumps: Record<string, unknown>[][] = [];
    // BullMQ's add takes its job counter's next value even for a job with an id of its own
    // (the cluster's path gives it the receiver's); the one script does not.
    const unlike = new Set([":sync:id", ...(options.unlike ?? [])]);
    const comparable = (dump: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(dump).filter(([key]) => !unlike.has(key)));
    for (const separateCalls of [false, true]) {
      const run = receiver({ separateCalls, liveShare: { limit: 2, windowMs: 86_400_000 } });
      const worker = new Worker(run.queues.sync.name, null, {
        connection: workerRedis,
        prefix: run.prefix,
        autorun: false,
      });
      onTestFinished(() => worker.close());
      const taken: Record<string, unknown>[] = [];
      await scenario(run, worker, async () => {
        taken.push(await queueDump(run.queues, run.prefix));
      });
      taken.push(await queueDump(run.queues, run.prefix));
      dumps.push(taken);
    }
    expect(dumps[0]?.map(comparable)).toEqual(dumps[1]?.map(comparable));
    return { script: dumps[0]?.at(-1), add: dumps[1]?.at(-1) } as Record<
      "script" | "add",
      Record<string, { value: unknown }>
    >;
  }

  const updated = (seq: number, hour: number) => {
    const model = newModelOrder(seq, 1000 + seq);
    model.updatedAt = `2026-11-01T${String(hour).padStart(2, "0")}:00:00Z`;
    return {
      shop,
      topic: "orders/updated",
      webhookId: `w-${seq}-${hour}`,
      eventId: `e-${seq}-${hour}`,
      triggeredAt: null,
      rawBody: JSON.stringify(orderPayload(model)),
    };
  };

  it("pins the BullMQ script it follows (a new BullMQ: read add-live-job.lua again)", () => {
    const sha = createHash("sha1").update(addPrioritizedJob.content).digest("hex");
    expect(sha).toBe(ADD_PRIORITIZED_JOB_SHA1);
  });

  it("adds new jobs alike, live and flood, into a waiting job alike", async () => {
    const { script: dump, add } = await both(async ({ ingest }) => {
      for (let i = 1; i <= 3; i++) expect(await ingest.ingest(updated(500 + i, 10))).toBe("queued");
      // A newer version of a waiting order joins its job.
      expect(await ingest.ingest(updated(501, 11))).toBe("queued");
    });
    expect(Object.keys(dump)).toContain(":sync:prioritized");
    // Ids of the receiver's own ('<shop>|<order>|<stamp>', on both paths): BullMQ's job counter
    // is never taken.
    expect(Object.keys(dump)).toContain(`:sync:${shop}|9000000501|S1`);
    expect(dump[":sync:id"]).toBeUndefined();
    expect(add[":sync:id"]?.value).toBe("4");
  });

  it("keeps the next job of a running order alike, and the worker runs both alike", async () => {
    const { script: dump } = await both(async ({ ingest, queues }, worker, checkpoint) => {
      expect(await ingest.ingest(updated(601, 10))).toBe("queued");
      const running = await worker.getNextJob("token-1");
      expect(running?.data.orderId).toBe("9000000601");
      // While it runs, a newer version: kept as the order's next job.
      expect(await ingest.ingest(updated(601, 11))).toBe("queued");
      expect(await queues.sync.getJobCountByTypes("prioritized")).toBe(0);
      await checkpoint();
      await running?.moveToCompleted("done", "token-1", false);
      const next = await worker.getNextJob("token-2");
      expect(next?.data.trigger).toBe("orders/updated");
      expect(next?.id).not.toBe(running?.id);
      await next?.moveToCompleted("done", "token-2", false);
    });
    // Both finished and were removed (SYNC_JOB_OPTIONS), with their deduplication keys.
    expect(
      Object.keys(dump).filter((key) => !/:sync:(events|meta|id|marker|pc)$/.test(key)),
    ).toEqual([]);
  });

  it("recovers a deduplication key its job outlived, alike", async () => {
    await both(async ({ ingest, queues }) => {
      await redis.set(`${queues.sync.keys.de}:${shop}:9000000701`, "999");
      expect(await ingest.ingest(updated(701, 10))).toBe("queued");
      expect(await queues.sync.getJobCountByTypes("prioritized")).toBe(1);
    });
  });

  it("adds to a paused queue alike but for the marker; a worker woken by it takes nothing", async () => {
    const markers: number[] = [];
    await both(
      async ({ ingest, queues }, worker) => {
        await queues.sync.pause();
        expect(await ingest.ingest(updated(801, 10))).toBe("queued");
        markers.push(await redis.zcard(`${queues.sync.keys.marker}`));
        // Paused, a worker takes no job, marker or not; resumed, it takes the order's job.
        expect(await worker.getNextJob("token-paused")).toBeUndefined();
        await queues.sync.resume();
        const job = await worker.getNextJob("token-resumed");
        expect(job?.data.orderId).toBe("9000000801");
        await job?.moveToCompleted("done", "token-resumed", false);
      },
      { unlike: [":sync:marker"] },
    );
    // The one script does not read the queue meta and adds the marker (a worker's wake-up,
    // nothing else: see add-live-job.lua); BullMQ's add leaves it out on a paused queue.
    expect(markers).toEqual([1, 0]);
  });
});

describe("BullMQ's worker and the one script's jobs", () => {
  it("runs them", async () => {
    const { ingest, queues, prefix } = receiver();
    const done: string[] = [];
    const worker = new Worker<SyncJobData>(
      queues.sync.name,
      async (job) => {
        done.push(job.data.orderId);
      },
      { connection: workerRedis, prefix },
    );
    onTestFinished(() => worker.close());
    for (let i = 1; i <= 3; i++) expect(await ingest.ingest(delivery(900 + i))).toBe("queued");
    await expect.poll(() => done.sort()).toEqual(["9000000901", "9000000902", "9000000903"]);
  });
});
