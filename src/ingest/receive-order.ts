import { Backoffs, type JobsOptions, optsEncodeMap } from "bullmq";
import type { Result } from "ioredis";
import { defineScripts, type LuaScript, loadLua } from "../lib/lua.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SyncJobData } from "../queue/jobs.ts";
import { LIVE_ARRIVALS_LUA, type LiveJobPlan } from "../queue/order-queues.ts";
import {
  type OrderMark,
  SNAPSHOT_WRITE_LUA,
  type SnapshotWrite,
  snapshotWriteArgs,
} from "./snapshot-store.ts";

/**
 * The receiver's durable step for an event about an order in one Redis call on a single Redis
 * (lua/receive-order.lua): newer-only snapshot with the dedupe mark in it, the shop's arrival
 * count and the order's sync job. The script is put together from the scripts each part already
 * has, each run unchanged as a local function: the snapshot write beside it, the arrival counter
 * of src/queue/, and lua/add-live-job.lua, BullMQ's addPrioritizedJob for this one kind of job,
 * so a job added here is the job `OrderQueues.enqueueSync` adds with the same id
 * (test/ingest/receive-order.test.ts compares the two on every path, and pins the BullMQ script
 * it follows).
 *
 * Per order webhook that is 12 Redis commands, scripts' own included, for a new order (11 for
 * one whose snapshot is kept): the script; the snapshot's read (HMGET: the part's version, the
 * marks, its expiry moment and job stamp), write (HSET: the part, the mark, the job stamp) and,
 * for a new hash or one with less than half its lifetime left, expiry (PEXPIRE); the arrival
 * count (INCR); and BullMQ's add: deduplication key (SET NX), job hash (HMSET), 'added' event
 * (XADD), priority counter (INCR), prioritized set and marker (ZADD, ZADD), 'waiting' event
 * (XADD). Fewer would break a contract: BullMQ's job (its hash, deduplication key, priority
 * order, marker) and its events stream, read by QueueEvents; a snapshot hash always has an
 * expiry, which Redis 7 cannot set with HSET.
 */

const dir = new URL("./lua/", import.meta.url);
const asFunction = (name: string, body: string) =>
  `local function ${name}(KEYS, ARGV)\n${body}\nend\n`;

const RECEIVE_ORDER: LuaScript = {
  numberOfKeys: undefined,
  lua: [
    asFunction("snapshotWrite", SNAPSHOT_WRITE_LUA.lua),
    asFunction("countLive", LIVE_ARRIVALS_LUA),
    `local function addLiveJob(KEYS, prefix, name, timestamp, dedupKey, dedupId, data, optsJson,
      priority, jobId, maxEvents)\n${loadLua(dir, "add-live-job").lua}\nend\n`,
    loadLua(dir, "receive-order").lua,
  ].join("\n"),
};

declare module "ioredis" {
  interface RedisCommander<Context> {
    receiveOrder(
      numberOfKeys: 12,
      ...keysAndArgs: (string | number)[]
    ): Result<[number, string?, number?], Context>;
  }
}

/** BullMQ's stored form of a job's options (its Job class and optsAsJSON, for ours). */
function storedOptions(queueDefaults: JobsOptions, options: JobsOptions): Record<string, unknown> {
  const merged: JobsOptions = { attempts: 0, ...queueDefaults, ...options };
  if (merged.backoff !== undefined) merged.backoff = Backoffs.normalize(merged.backoff);
  const encode = optsEncodeMap as Record<string, string>;
  const stored: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(merged)) {
    if (value !== undefined) stored[encode[name] ?? name] = value;
  }
  return stored;
}

/** addPrioritizedJob's KEYS, in its order (its script's header). */
const ADD_JOB_KEYS = [
  "marker",
  "meta",
  "id",
  "prioritized",
  "delayed",
  "completed",
  "active",
  "events",
  "pc",
] as const;

/** What the script needs of one queue and its job options, worked out once. */
interface QueueArgs {
  /** The options these were worked out for. */
  options: JobsOptions;
  keys: string[];
  /** The queue's key prefix, '<prefix>:sync:' (a job's hash is this and its id). */
  jobPrefix: string;
  deduplicationPrefix: string;
  /** The options' stored JSON without its closing brace, to append `de` to. */
  optionsHead: string;
  /** The queue's events cap (BullMQ's Queue keeps it in the queue meta). */
  maxEvents: number;
}

/**
 * The id of an order's job added by the receiver: '<shop>|<order>|<stamp>', the stamp taken by
 * the snapshot write (lua/snapshot-write.lua). BullMQ's custom ids may not be integers nor hold
 * ':'; a shop's domain and an order's ID hold neither.
 */
export const receiverJobIdPrefix = (shop: string, orderId: string) => `${shop}|${orderId}|`;

export class OrderReceiver {
  readonly #redis: RedisConnection;
  readonly #queues = new WeakMap<object, QueueArgs>();

  constructor(redis: RedisConnection) {
    this.#redis = redis;
    defineScripts(redis, { receiveOrder: RECEIVE_ORDER });
  }

  /**
   * Runs the whole step: the code is the snapshot write's (see SnapshotStore's putOutcome: 3
   * duplicate, 0 older, both with no job; 1 stored and 2 same, with the order's job added,
   * deduplicated per order as `enqueueSync` adds it) and, with `seen`, the mark set.
   */
  async receive(
    write: SnapshotWrite,
    options: {
      ttlMs: number;
      liveAt: number;
      seen: OrderMark | null;
      plan: LiveJobPlan;
      data: SyncJobData;
    },
  ): Promise<{ code: number; jobId: string | null }> {
    const { plan, seen, data } = options;
    const queue = this.#queueArgs(plan);
    const id = JSON.stringify(plan.deduplicationId);
    const now = Date.now();
    const snapshotArgs = snapshotWriteArgs(write, {
      ttlMs: options.ttlMs,
      liveAt: options.liveAt,
      now,
      seen,
      markAlways: true,
      stamp: true,
    });
    const [code, jobId] = await this.#redis.receiveOrder(
      12,
      ...queue.keys,
      write.key,
      ...plan.arrivalKeys(now),
      // The snapshot write's arguments but its clock, the mark behaviour and the stamp.
      ...snapshotArgs.slice(0, 6),
      seen?.id ?? "",
      seen?.ttlSeconds ?? 0,
      plan.share.windowMs,
      plan.share.limit,
      plan.priorities.live,
      plan.priorities.flood,
      queue.jobPrefix,
      plan.jobName,
      now,
      `${queue.deduplicationPrefix}${plan.deduplicationId}`,
      JSON.stringify(data),
      `${queue.optionsHead}"de":{"id":${id},"keepLastIfActive":true}}`,
      receiverJobIdPrefix(data.shop, data.orderId),
      queue.maxEvents,
    );
    return { code, jobId: jobId ?? null };
  }

  #queueArgs(plan: LiveJobPlan): QueueArgs {
    let args = this.#queues.get(plan.queue);
    if (args?.options !== plan.jobOptions) {
      const keys = plan.queue.keys;
      const key = (name: string) => {
        const value = keys[name];
        if (value === undefined) throw new Error(`BullMQ queue has no '${name}' key`);
        return value;
      };
      const stored = JSON.stringify(storedOptions(plan.queue.defaultJobOptions, plan.jobOptions));
      args = {
        options: plan.jobOptions,
        keys: ADD_JOB_KEYS.map(key),
        jobPrefix: key(""),
        deduplicationPrefix: `${key("de")}:`,
        optionsHead: stored === "{}" ? "{" : `${stored.slice(0, -1)},`,
        maxEvents: plan.queue.opts.streams?.events?.maxLen ?? 10_000,
      };
      this.#queues.set(plan.queue, args);
    }
    return args;
  }
}
