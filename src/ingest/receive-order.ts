import { Backoffs, type JobsOptions, optsEncodeMap } from "bullmq";
import type { Result } from "ioredis";
import { defineScripts, type LuaScript, loadLua } from "../lib/lua.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SyncJobData } from "../queue/jobs.ts";
import { LIVE_ARRIVALS_LUA, type LiveJobPlan } from "../queue/order-queues.ts";
import type { SnapshotWrite } from "./snapshot-store.ts";

/**
 * The receiver's durable step for an event about an order in one Redis call on a single Redis
 * (lua/receive-order.lua): dedupe check, newer-only snapshot, the shop's arrival count, the
 * order's sync job and the dedupe mark. The script is put together from the scripts each part
 * already has, each run unchanged as a local function: the snapshot scripts beside it, the
 * arrival counter of src/queue/, and lua/add-live-job.lua, BullMQ's addPrioritizedJob for this
 * one kind of job with its two queue meta reads merged, so a job added here is the job
 * `OrderQueues.enqueueSync` adds (test/ingest/receive-order.test.ts compares the two on every
 * path, and pins the BullMQ script it follows).
 *
 * Per order webhook that is 15 Redis commands, scripts' own included: the script, the mark
 * (SET NX EX), the snapshot's version read, write and expiry (HGET, HSET, PEXPIRE), the arrival
 * count (INCR), and BullMQ's add: job id (INCR), queue meta (HMGET), deduplication key (SET NX),
 * job hash (HMSET), 'added' event (XADD), priority counter (INCR), prioritized set and marker
 * (ZADD, ZADD), 'waiting' event (XADD). Fewer would break a contract: BullMQ's job (its hash,
 * counters, deduplication key, marker) and its events stream, read by QueueEvents; the
 * snapshot's expiry, which Redis 7 cannot set with HSET; the mark, whose 72 hours differ from
 * the snapshot's lifetime and which answers a redelivery "duplicate".
 */

const dir = new URL("./lua/", import.meta.url);
const asFunction = (name: string, body: string) =>
  `local function ${name}(KEYS, ARGV)\n${body}\nend\n`;

const RECEIVE_ORDER: LuaScript = {
  numberOfKeys: undefined,
  lua: [
    asFunction("snapshotPart", loadLua(dir, "snapshot-part").lua),
    asFunction("snapshotHint", loadLua(dir, "snapshot-hint").lua),
    asFunction("countLive", LIVE_ARRIVALS_LUA),
    `local function addLiveJob(KEYS, prefix, name, timestamp, dedupKey, dedupId, data, optsJson,
      priority)\n${loadLua(dir, "add-live-job").lua}\nend\n`,
    loadLua(dir, "receive-order").lua,
  ].join("\n"),
};

declare module "ioredis" {
  interface RedisCommander<Context> {
    receiveOrder(
      numberOfKeys: 12 | 13,
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
}

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
      seen: { key: string; ttlSeconds: number } | null;
      plan: LiveJobPlan;
      data: SyncJobData;
    },
  ): Promise<{ code: number; jobId: string | null }> {
    const { plan, seen } = options;
    const queue = this.#queueArgs(plan);
    const part =
      write.kind === "part"
        ? [write.field, write.versionField, write.json, write.version]
        : ["", "", "", write.atMs];
    const id = JSON.stringify(plan.deduplicationId);
    const now = Date.now();
    const [code, jobId] = await this.#redis.receiveOrder(
      seen ? 13 : 12,
      ...queue.keys,
      write.key,
      ...plan.arrivalKeys(now),
      ...(seen ? [seen.key] : []),
      ...part,
      options.ttlMs,
      options.liveAt,
      seen?.ttlSeconds ?? 0,
      plan.share.windowMs,
      plan.share.limit,
      plan.priorities.live,
      plan.priorities.flood,
      queue.jobPrefix,
      plan.jobName,
      now,
      `${queue.deduplicationPrefix}${plan.deduplicationId}`,
      JSON.stringify(options.data),
      `${queue.optionsHead}"de":{"id":${id},"keepLastIfActive":true}}`,
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
      };
      this.#queues.set(plan.queue, args);
    }
    return args;
  }
}
