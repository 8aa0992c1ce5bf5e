import { defineScripts, type LuaScript, loadLua } from "../../lib/lua.ts";
import type { RedisConnection } from "../../lib/redis-keys.ts";

/**
 * The per-store limiter's Redis scripts (`lua/`, each with a header naming its KEYS and ARGV,
 * and its policies split into `lua/includes/`), each called through one typed function below
 * that builds its KEYS and ARGV in one place (bullmq's `scripts.ts` is the model). Time is
 * Redis's own (`TIME`), so every worker process decides against one clock. A slot is the score
 * (grant time, ms) of a sorted-set member; it occupies the window until
 * `score + window + margin`. The rule they keep: ADR 0001.
 */
const dir = new URL("./lua/", import.meta.url);

const LIMITER_SCRIPTS = {
  limiterAcquire: loadLua(dir, "acquire-10"),
  limiterRelease: loadLua(dir, "release-3"),
  limiterSettle: loadLua(dir, "settle-5"),
  limiterObserve: loadLua(dir, "observe-6"),
  limiterAnswered: loadLua(dir, "answered-6"),
  limiterSent: loadLua(dir, "sent-1"),
  limiterBlock: loadLua(dir, "block-2"),
  limiterNow: loadLua(dir, "now-0"),
  limiterInspect: loadLua(dir, "inspect-6"),
  limiterKnown: loadLua(dir, "known-1"),
} satisfies Record<string, LuaScript>;

type ScriptName = keyof typeof LIMITER_SCRIPTS;
type Arg = string | number;

/** A store's keys, hash-tagged by store so one script touches one Redis Cluster slot. */
export function storeKeys(prefix: string, storeId: number) {
  const base = `${prefix}:limiter:{${storeId}}`;
  return {
    /** Bulk work's slots (backfill, resync, sweep). */
    slots: `${base}:slots`,
    /** Live work's slots, apart so the live reserve is counted against the rest. */
    live: `${base}:slots:live`,
    /** Other clients' requests, learned from the server's RateLimit headers. */
    others: `${base}:others`,
    /**
     * Our slots whose answer is not back yet (the server may not have counted them), by the
     * moment their request left (see lua/includes/inflight.lua).
     */
    inflight: `${base}:inflight`,
    /**
     * Our answered requests by grant time, for reading an answer's RateLimit headers (kept
     * while another client is about).
     */
    answered: `${base}:answered`,
    /** When the next bulk grant is due (bulk work is paced over the window). */
    paced: `${base}:paced`,
    /** When a live request went out alone to learn the store's budget (slow start). */
    probe: `${base}:probe`,
    /**
     * The store's small state, one hash (lua/includes/lag.lua): how late waiters are granted
     * and slots settled on average (see lua/includes/kth.lua), the time of the last answer
     * (while its budget is known), a shortfall our own requests in flight may explain, until
     * when a 429 blocks the store.
     */
    lag: `${base}:lag`,
    liveWaiters: `${base}:waiters:live`,
    bulkWaiters: `${base}:waiters:bulk`,
    /** When each waiter was told to come back, for how late the queue hands jobs back. */
    told: `${base}:waiters:told`,
  };
}

export type StoreKeys = ReturnType<typeof storeKeys>;

/** What ACQUIRE is told (lua/acquire-10.lua names each in its header). */
export interface AcquireArgs {
  limit: number;
  windowMs: number;
  marginMs: number;
  /** Slots bulk work leaves to live work. */
  reserve: number;
  /** The new slot's id. */
  member: string;
  /** The job that queues for its own future slot when refused, or "". */
  waiter: string;
  priority: "live" | "bulk";
  /** A slot granted earlier to whoever queued the job, or "". */
  prepaid: string;
  /** Slots left unused while another client is spending. */
  sharedHeadroom: number;
  /** Pace bulk work over the window. */
  pace: boolean;
  /** The caller asks again without having left the process. */
  again: boolean;
  /** How long live work waits for a slow start's first answer (0: no slow start). */
  probeMs: number;
  /** The caller sends the request the moment it is granted: the grant marks it as leaving. */
  sendsNow?: boolean | undefined;
}

export interface AcquireReply {
  granted: boolean;
  /** The grant time, or when to come back. */
  timeMs: number;
  reason: "ok" | "prepaid" | "window" | "blocked" | "reserved" | "paced";
  remaining: number;
  /** How much earlier than `timeMs` a job parked in the queue is handed back. */
  leadMs: number;
  /** Granted to a caller that sends at once: the moment its request left (µs), for ANSWERED. */
  sentAtUs: string | undefined;
}

export interface ObserveArgs {
  /** The smaller of ours and the server's. */
  limit: number;
  windowMs: number;
  marginMs: number;
  serverRemaining: number;
  serverResetMs: number;
}

/** The slot an answer is for, as its grant (and SENT) told it. */
export interface AnsweredSlot {
  member: string;
  priority: "live" | "bulk";
  /** Its grant time (ms), when known. */
  grantedAtMs?: number | undefined;
  /** The moment its request left (µs), when known. */
  sentAtUs?: string | undefined;
}

export interface InspectReply {
  used: number;
  blockedUntil: number;
  /** The oldest counted slot's start, or -1. */
  oldestMs: number;
  liveWaiting: number;
  bulkWaiting: number;
  nowMs: number;
}

/** One typed function per limiter script; the only place their KEYS and ARGV are ordered. */
export class LimiterScripts {
  readonly #redis: RedisConnection;
  readonly #prefix: string;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
    defineScripts(redis, LIMITER_SCRIPTS);
  }

  keys(storeId: number): StoreKeys {
    return storeKeys(this.#prefix, storeId);
  }

  async acquire(storeId: number, a: AcquireArgs): Promise<AcquireReply> {
    const k = this.keys(storeId);
    const [granted, time, reason, remaining, lead, left] = (await this.#run(
      "limiterAcquire",
      [
        k.slots,
        k.liveWaiters,
        k.bulkWaiters,
        k.live,
        k.others,
        k.inflight,
        k.paced,
        k.lag,
        k.probe,
        k.told,
      ],
      [
        a.limit,
        a.windowMs,
        a.marginMs,
        a.reserve,
        a.member,
        a.waiter,
        a.priority,
        a.prepaid,
        a.sharedHeadroom,
        a.pace ? "1" : "0",
        a.again ? "1" : "0",
        a.probeMs,
        a.sendsNow ? "1" : "0",
      ],
    )) as [number, number, AcquireReply["reason"], number, number | undefined, string | undefined];
    return {
      granted: granted === 1,
      timeMs: time,
      reason,
      remaining,
      leadMs: Number(lead ?? 0),
      sentAtUs: left ? String(left) : undefined,
    };
  }

  /** Marks the slot's request as leaving now: the moment (µs) when the slot is in flight. */
  async sent(storeId: number, a: { member: string }): Promise<string | undefined> {
    const k = this.keys(storeId);
    const left = (await this.#run("limiterSent", [k.inflight], [a.member])) as string | number;
    return left ? String(left) : undefined;
  }

  /** Settles a slot at its answer; 1 when the slot moved later. */
  async settle(
    storeId: number,
    a: {
      member: string;
      marginMs: number;
      windowMs: number;
      answeredAgoMs: number;
      /** The slot's ledger, when known: looked in first. */
      priority?: "live" | "bulk" | undefined;
      /** Its grant time (ms), when known. */
      grantedAtMs?: number | undefined;
    },
  ): Promise<number> {
    const k = this.keys(storeId);
    return (await this.#run(
      "limiterSettle",
      [k.slots, k.live, k.inflight, k.answered, k.lag],
      [a.member, a.marginMs, a.windowMs, a.answeredAgoMs, a.priority ?? "", a.grantedAtMs ?? ""],
    )) as number;
  }

  /**
   * A slot's answer: OBSERVE (when `serverRemaining` is given) and SETTLE at once, now; how many
   * other-client requests were learned.
   */
  async answered(
    storeId: number,
    a: Omit<ObserveArgs, "serverRemaining"> & {
      serverRemaining: number | undefined;
      slot: AnsweredSlot;
    },
  ): Promise<number> {
    const k = this.keys(storeId);
    return (await this.#run(
      "limiterAnswered",
      [k.slots, k.live, k.others, k.inflight, k.answered, k.lag],
      [
        a.limit,
        a.windowMs,
        a.marginMs,
        a.serverRemaining ?? "",
        a.serverResetMs,
        a.slot.member,
        a.slot.priority,
        a.slot.grantedAtMs ?? "",
        a.slot.sentAtUs ?? "",
      ],
    )) as number;
  }

  /** Gives a slot back; 1 when it was held. */
  async release(storeId: number, a: { member: string }): Promise<number> {
    const k = this.keys(storeId);
    return (await this.#run("limiterRelease", [k.slots, k.live, k.inflight], [a.member])) as number;
  }

  /**
   * Learns from the RateLimit headers of an answer to a call made outside a slot; how many
   * other-client requests were learned. (A slot's answer: `answered`.)
   */
  async observe(storeId: number, a: ObserveArgs): Promise<number> {
    const k = this.keys(storeId);
    return (await this.#run(
      "limiterObserve",
      [k.slots, k.live, k.others, k.inflight, k.answered, k.lag],
      [a.limit, a.windowMs, a.marginMs, a.serverRemaining, a.serverResetMs],
    )) as number;
  }

  /** Blocks the store after a 429; the block's end and Redis's now (ms). */
  async block(
    storeId: number,
    a: { retryAfterMs: number; jitterMs: number; refusedSlot: string },
  ): Promise<{ untilMs: number; nowMs: number }> {
    const k = this.keys(storeId);
    const [untilMs, nowMs] = (await this.#run(
      "limiterBlock",
      [k.lag, k.answered],
      [a.retryAfterMs, a.jitterMs, a.refusedSlot],
    )) as [number, number];
    return { untilMs, nowMs };
  }

  /** Whether an answer told us the store's count within the last window. */
  async known(storeId: number): Promise<boolean> {
    return (await this.#run("limiterKnown", [this.keys(storeId).lag], [])) === 1;
  }

  /** Redis's clock, ms. */
  async now(): Promise<number> {
    return (await this.#run("limiterNow", [], [])) as number;
  }

  async inspect(storeId: number, a: { windowMs: number; marginMs: number }): Promise<InspectReply> {
    const k = this.keys(storeId);
    const [used, blocked, oldest, live, bulk, now] = (await this.#run(
      "limiterInspect",
      [k.slots, k.lag, k.liveWaiters, k.bulkWaiters, k.live, k.others],
      [a.windowMs, a.marginMs],
    )) as [number, number, string | number, number, number, number];
    return {
      used,
      blockedUntil: blocked,
      oldestMs: Number(oldest),
      liveWaiting: live,
      bulkWaiting: bulk,
      nowMs: now,
    };
  }

  /** The one untyped step: the command `defineScripts` registered on the connection. */
  #run(name: ScriptName, keys: string[], argv: Arg[]): Promise<unknown> {
    const command = (
      this.#redis as unknown as Record<ScriptName, (...a: Arg[]) => Promise<unknown>>
    )[name];
    return command.call(this.#redis, ...keys, ...argv);
  }
}
