import { Backoffs, type JobsOptions, optsEncodeMap } from "bullmq";
import { addPrioritizedJob } from "bullmq/dist/cjs/scripts/addPrioritizedJob-9.js";
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
 * arrival counter of src/queue/, and BullMQ's own addPrioritizedJob, so a job added here is the
 * job `OrderQueues.enqueueSync` adds (test/ingest/receive-order.test.ts compares the two).
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
    asFunction("addJob", addPrioritizedJob.content),
    loadLua(dir, "receive-order").lua,
  ].join("\n"),
};

declare module "ioredis" {
  interface RedisCommander<Context> {
    receiveOrder(
      numberOfKeys: 11 | 12,
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

export class OrderReceiver {
  readonly #redis: RedisConnection;
  readonly #storedOptions = new WeakMap<JobsOptions, Record<string, unknown>>();

  constructor(redis: RedisConnection) {
    this.#redis = redis;
    defineScripts(redis, { receiveOrder: RECEIVE_ORDER });
  }

  /**
   * Runs the whole step. `put` is the snapshot write's outcome (see SnapshotStore): "duplicate"
   * or "older" add no job; "stored" and "same" add the order's job (deduplicated per order, as
   * `enqueueSync`) and, with `seen`, write the mark in the same call.
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
    const keys = plan.queue.keys;
    const part =
      write.kind === "part"
        ? [write.field, write.versionField, write.json, write.version]
        : ["", "", "", write.atMs];
    const args = [
      keys.marker,
      keys.meta,
      keys.id,
      keys.prioritized,
      keys.delayed,
      keys.completed,
      keys.active,
      keys.events,
      keys.pc,
      write.key,
      plan.arrivalsKey,
      ...(seen ? [seen.key] : []),
      ...part,
      options.ttlMs,
      options.liveAt,
      seen?.ttlSeconds ?? 0,
      plan.share.windowMs,
      plan.share.limit,
      plan.priorities.live,
      plan.priorities.flood,
      keys[""] ?? "",
      plan.jobName,
      Date.now(),
      `${keys.de}:${plan.deduplicationId}`,
      JSON.stringify(options.data),
      JSON.stringify({
        ...this.#optionsOf(plan),
        de: { id: plan.deduplicationId, keepLastIfActive: true },
      }),
    ];
    const [code, jobId] = await this.#redis.receiveOrder(seen ? 12 : 11, ...args);
    return { code, jobId: jobId ?? null };
  }

  #optionsOf(plan: LiveJobPlan): Record<string, unknown> {
    let stored = this.#storedOptions.get(plan.jobOptions);
    if (!stored) {
      stored = storedOptions(plan.queue.defaultJobOptions, plan.jobOptions);
      this.#storedOptions.set(plan.jobOptions, stored);
    }
    return stored;
  }
}
