import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { defineScripts } from "../../lib/lua.ts";
import type { RedisConnection } from "../../lib/redis-keys.ts";
import { LIMITER_SCRIPTS } from "./scripts.ts";

export interface LimiterOptions {
  /** Requests per window per store (PROVIDER_RATE_LIMIT). */
  limit: number;
  /** The window in ms (PROVIDER_RATE_WINDOW_MS). */
  windowMs: number;
  /** Added to each slot's life to cover the time from our grant to the server's arrival. */
  marginMs?: number;
  /**
   * Share of the limit kept for live work (default 5 %): backfill, resync and other clients'
   * requests together never use it, so a live order goes out at once. It is counted against
   * everything but live work, so live orders add to a saturated window rather than replace bulk
   * slots. Live waiters also go ahead of bulk ones.
   */
  bulkReserve?: number;
  /**
   * Share of the limit left unused while another client is seen spending the store's budget
   * (default 2 %, rounded up to whole slots): that client's requests made since our last answer
   * are unseen until the next one. The limiter adds the requests it expects from that client in
   * the time since the last answer. 0 leaves only that.
   */
  sharedHeadroom?: number;
  /**
   * Spread bulk work's slots evenly over the window (default true) instead of granting every
   * free slot at once; see ACQUIRE in scripts.ts.
   */
  paceBulk?: boolean;
  /**
   * Slow start for live work (default true): while no answer has told the limiter a store's
   * budget, the first live request goes alone and the others wait for its answer (at most
   * `shortWaitMs`), so a burst on an idle store another client shares does not meet 429s.
   */
  liveSlowStart?: boolean;
  /** Random extra wait after a 429, so blocked workers do not return in one burst. */
  jitterMs?: number;
  prefix?: string;
}

export type Priority = "live" | "bulk";

export type Decision =
  | { granted: true; remaining: number; slotId: string; grantedAtMs: number }
  | {
      granted: false;
      retryAtMs: number;
      waitMs: number;
      reason: "window" | "blocked" | "reserved" | "paced";
      /**
       * How much earlier than `retryAtMs` a job parked in the queue should be handed back: the
       * time the queue has lately taken to hand a job back to a worker. The job then waits the
       * rest in the process (`acquireOrWait`) and takes its slot the moment it frees.
       */
      leadMs: number;
    };

/** What `inspect` reports: the store's budget as every process sees it, read without writing. */
export interface LimiterInspection {
  limit: number;
  windowMs: number;
  /** Requests counted in the current rolling window (ours and other clients' learned ones). */
  used: number;
  remaining: number;
  /** Epoch ms until which a 429 blocks the store, or null. */
  blockedUntil: number | null;
  /** Epoch ms when the oldest counted request leaves the window, or null when none. */
  nextFreeAt: number | null;
  /** Jobs parked in the delayed set waiting for their slot. */
  waiting: { live: number; bulk: number };
}

/** A slot whose request is being made, and when its answer came (this process's monotonic clock). */
interface SpentSlot {
  id: string;
  answeredAt?: number;
}

/**
 * The per-store provider budget, shared by every worker process through Redis (ADR 0001).
 * Exact rolling window: no more than `limit` grants in any `windowMs` span as the server sees
 * them; one atomic script call per decision; a refusal says exactly when a slot frees, so the
 * caller can delay its job until then instead of polling.
 */
export class StoreRateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly marginMs: number;
  readonly bulkCeiling: number;
  /** Slots of the limit bulk work leaves to live work (limit - bulkCeiling). */
  readonly liveReserve: number;
  /** Slots left unused while another client spends the same budget. */
  readonly sharedHeadroom: number;
  readonly paceBulk: boolean;
  readonly liveSlowStart: boolean;
  /** The longest refusal `acquireOrWait` waits out in process: a fifth of the window, ≤ 1 s. */
  readonly shortWaitMs: number;
  readonly #jitterMs: number;
  readonly #prefix: string;
  /** The slot of the request being made (see `spend`), for `observe` to place its answer. */
  readonly #slot = new AsyncLocalStorage<SpentSlot>();
  readonly #redis: RedisConnection;

  constructor(redis: RedisConnection, options: LimiterOptions) {
    this.#redis = redis;
    defineScripts(redis, LIMITER_SCRIPTS);
    this.limit = options.limit;
    this.windowMs = options.windowMs;
    // Settling each slot at its answer covers the time a request takes to leave: the server
    // counted it no later than its answer came, and the slot then frees no earlier than a
    // window after that answer. The margin is left for clock granularity and for a request
    // whose answer is not back when its slot would free. It is spent on every slot's life, so
    // it is the one fixed cost per window of a line that keeps the window full: 5 ms at a
    // 2 s window (a quarter of a slot interval), 50 ms from 20 s on.
    this.marginMs =
      options.marginMs ?? Math.min(50, Math.max(2, Math.ceil(options.windowMs / 400)));
    this.bulkCeiling = Math.max(1, Math.floor(options.limit * (1 - (options.bulkReserve ?? 0.05))));
    this.liveReserve = options.limit - this.bulkCeiling;
    this.paceBulk = options.paceBulk ?? true;
    this.liveSlowStart = options.liveSlowStart ?? true;
    this.shortWaitMs = Math.min(1_000, Math.max(20, Math.ceil(options.windowMs / 5)));
    this.sharedHeadroom = Math.min(
      options.limit - 1,
      Math.ceil(options.limit * (options.sharedHeadroom ?? 0.02)),
    );
    this.#jitterMs = options.jitterMs ?? Math.min(1_000, Math.ceil(options.windowMs / 20));
    this.#prefix = options.prefix ?? "connector";
  }

  /** A store's keys, hash-tagged by store so one script touches one Redis Cluster slot. */
  #keys(storeId: number) {
    const base = `${this.#prefix}:limiter:{${storeId}}`;
    return {
      /** Bulk work's slots (backfill, resync, sweep). */
      slots: `${base}:slots`,
      /** Live work's slots, apart so the live reserve is counted against the rest. */
      live: `${base}:slots:live`,
      /** Other clients' requests, learned from the server's RateLimit headers. */
      others: `${base}:others`,
      /** Our slots whose answer is not back yet (the server may not have counted them). */
      pending: `${base}:pending`,
      /** Our answered requests by grant time, for reading an answer's RateLimit headers. */
      answered: `${base}:answered`,
      blocked: `${base}:blocked`,
      /** The time of the store's last answer; present while its budget is known. */
      seen: `${base}:seen`,
      /** When the next bulk grant is due (bulk work is paced over the window). */
      paced: `${base}:paced`,
      /** When a live request went out alone to learn the store's budget (slow start). */
      probe: `${base}:probe`,
      /** Our requests in flight by the moment they left (see SENT in scripts.ts). */
      sent: `${base}:sent`,
      /** A shortfall in the last answer that our own requests in flight may explain. */
      doubt: `${base}:doubt`,
      /** How late waiters are granted and slots settled, on average (see KTH in scripts.ts). */
      lag: `${base}:lag`,
      liveWaiters: `${base}:waiters:live`,
      bulkWaiters: `${base}:waiters:bulk`,
      /** When each waiter was told to come back, for how late the queue hands jobs back. */
      told: `${base}:waiters:told`,
    };
  }

  /** Whether a response from this store taught us its budget within the last window. */
  async knows(storeId: number): Promise<boolean> {
    return (await this.#redis.exists(this.#keys(storeId).seen)) === 1;
  }

  /**
   * One decision. `waiter` (a job id) lets a refused caller queue for its own future slot, so
   * that waiting jobs wake one by one as slots free, not all together. `prepaid` is a slot
   * granted to whoever queued the job (the backfill feeder): used once, if it is still in the
   * window, without counting a second time. `again` marks a caller asking again without having
   * left the process (acquireOrWait), so its wait is not taken for the queue's delay.
   */
  async acquire(
    storeId: number,
    priority: Priority = "live",
    waiter = "",
    prepaid = "",
    again = false,
  ): Promise<Decision> {
    const slotId = randomUUID();
    const k = this.#keys(storeId);
    const [granted, time, reason, remaining, lead] = (await this.#call(
      "limiterAcquire",
      k.slots,
      k.blocked,
      k.liveWaiters,
      k.bulkWaiters,
      k.live,
      k.others,
      k.pending,
      k.seen,
      k.paced,
      k.lag,
      k.probe,
      k.told,
      this.limit,
      this.windowMs,
      this.marginMs,
      this.liveReserve,
      slotId,
      waiter,
      priority,
      prepaid,
      this.sharedHeadroom,
      this.paceBulk ? "1" : "0",
      again ? "1" : "0",
      this.liveSlowStart ? this.shortWaitMs : 0,
    )) as [number, number, string, number, number | undefined];
    if (granted === 1) return { granted: true, remaining, slotId, grantedAtMs: time };
    const now = await this.nowMs();
    return {
      granted: false,
      retryAtMs: time,
      waitMs: Math.max(0, time - now),
      reason: reason as "window" | "blocked" | "reserved" | "paced",
      leadMs: Math.min(Number(lead ?? 0), this.shortWaitMs / 2),
    };
  }

  /**
   * `acquire`, but a refusal whose slot frees within `shortWaitMs` is waited out in the process
   * instead of answered: moving the job to the delayed set and back costs more than the wait,
   * and the job keeps its place in line. This is the common case for a live waiter woken at its
   * promised moment: the slot it was promised was settled at its request's answer, a little
   * later than the grant the promise was computed from. A 429 block is never waited out here.
   */
  async acquireOrWait(
    storeId: number,
    priority: Priority = "live",
    waiter = "",
    prepaid = "",
  ): Promise<Decision> {
    let decision = await this.acquire(storeId, priority, waiter, prepaid);
    for (let tries = 0; tries < 16; tries++) {
      if (decision.granted || decision.reason === "blocked") return decision;
      const { waitMs } = decision;
      if (waitMs > this.shortWaitMs) return decision;
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, waitMs)));
      decision = await this.acquire(storeId, priority, waiter, prepaid, true);
    }
    return decision;
  }

  /**
   * Makes the request of a granted slot: `call` runs with the slot known to `observe` (the
   * answer's RateLimit headers are read against the requests granted after it), and the slot
   * is settled on the answer or the failure, so it covers the request's real arrival. Settled
   * at the moment the answer came (`observe`), not when `call` returns: what the caller does
   * with the answer (writing its links) would otherwise keep the slot that much longer, every
   * window.
   */
  async spend<T>(storeId: number, slotId: string, call: () => Promise<T>): Promise<T> {
    let failed = false;
    const slot: SpentSlot = { id: slotId };
    try {
      return await this.#slot.run(slot, call);
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      // A settle that fails (Redis away) leaves the slot at its grant time. After a failed call
      // the call's own error is the one the caller must see (a 429 must still block the store).
      const ago = slot.answeredAt === undefined ? 0 : performance.now() - slot.answeredAt;
      await this.settle(storeId, slotId, ago).catch((error: unknown) => {
        if (!failed) throw error;
      });
    }
  }

  /**
   * Called by the provider client just before a store's request leaves: inside `spend`, the
   * slot's request is recorded as sent now, so answers are read against the requests that left
   * before it. Outside a slot (a call the limiter did not grant) it does nothing.
   */
  async sending(storeId: number): Promise<void> {
    const slotId = this.#slot.getStore()?.id;
    if (!slotId) return;
    const k = this.#keys(storeId);
    await this.#call("limiterSent", k.pending, k.sent, slotId, this.windowMs);
  }

  /**
   * After a request's answer or failure: its slot starts no earlier than the answer's moment
   * (now, or `answeredAgoMs` before now) less the margin, so a request that left late is never
   * forgotten before the server forgets it (see SETTLE).
   */
  async settle(storeId: number, slotId: string, answeredAgoMs = 0): Promise<void> {
    const k = this.#keys(storeId);
    await this.#call(
      "limiterSettle",
      k.slots,
      k.live,
      k.pending,
      k.answered,
      k.lag,
      k.sent,
      slotId,
      this.marginMs,
      this.windowMs,
      Math.max(0, Math.floor(answeredAgoMs)),
    );
  }

  /** Gives a slot back when its request was never sent. */
  async release(storeId: number, slotId: string): Promise<void> {
    const k = this.#keys(storeId);
    await this.#call("limiterRelease", k.slots, k.live, k.pending, k.sent, slotId);
  }

  /**
   * Learns from RateLimit-* headers; only ever lowers our estimate of what is left. The server's
   * own limit bounds what it can report: a server whose budget is larger than ours says nothing
   * we do not know (but the store is still marked as learned), and one whose budget is smaller
   * than the configured limit (a misconfigured PROVIDER_RATE_LIMIT) is modelled with its own,
   * so the count of other clients' requests stays within what a window can hold.
   */
  async observe(
    storeId: number,
    info: {
      limit?: number | undefined;
      remaining?: number | undefined;
      resetMs?: number | undefined;
    },
  ): Promise<number> {
    // The answer is back now: the server counted the request before it sent this (see `spend`).
    const slot = this.#slot.getStore();
    if (slot) slot.answeredAt = performance.now();
    if (info.remaining === undefined || !Number.isFinite(info.remaining) || info.remaining < 0)
      return 0;
    const serverLimit =
      info.limit !== undefined && Number.isFinite(info.limit) && info.limit > 0
        ? Math.min(this.limit, Math.floor(info.limit))
        : this.limit;
    const k = this.#keys(storeId);
    return (await this.#call(
      "limiterObserve",
      k.slots,
      k.seen,
      k.live,
      k.others,
      k.pending,
      k.answered,
      k.doubt,
      k.sent,
      k.lag,
      serverLimit,
      this.windowMs,
      this.marginMs,
      Math.min(serverLimit, Math.floor(info.remaining)),
      Math.floor(info.resetMs ?? 0),
      slot?.id ?? "",
    )) as number;
  }

  /**
   * After a 429: the store is blocked for every process until Retry-After (+ jitter). `slotId`,
   * the refused request's slot, stays in the ledger but is no longer one the server counted.
   */
  async block(storeId: number, retryAfterMs: number, slotId = ""): Promise<number> {
    const k = this.#keys(storeId);
    return (await this.#call(
      "limiterBlock",
      k.blocked,
      k.answered,
      Math.max(0, Math.ceil(retryAfterMs)),
      this.#jitterMs,
      slotId,
    )) as number;
  }

  /** A read-only look at a store's budget (for status pages): nothing is removed or added. */
  async inspect(storeId: number): Promise<LimiterInspection> {
    const k = this.#keys(storeId);
    const [used, blocked, oldest, live, bulk, now] = (await this.#call(
      "limiterInspect",
      k.slots,
      k.blocked,
      k.liveWaiters,
      k.bulkWaiters,
      k.live,
      k.others,
      this.windowMs,
      this.marginMs,
    )) as [number, number, string | number, number, number, number];
    const oldestMs = Number(oldest);
    return {
      limit: this.limit,
      windowMs: this.windowMs,
      used,
      remaining: Math.max(0, this.limit - used),
      blockedUntil: blocked > now ? blocked : null,
      nextFreeAt: oldestMs >= 0 ? oldestMs + this.windowMs + this.marginMs : null,
      waiting: { live, bulk },
    };
  }

  #call(name: string, ...args: (string | number)[]): Promise<unknown> {
    const command = (
      this.#redis as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>
    )[name];
    if (!command) throw new Error(`limiter script ${name} is not registered`);
    return command.apply(this.#redis, args);
  }

  async nowMs(): Promise<number> {
    return (await this.#call("limiterNow")) as number;
  }
}
