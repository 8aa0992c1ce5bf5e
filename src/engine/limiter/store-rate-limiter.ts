import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisConnection } from "../../lib/redis-keys.ts";
import { tracingOn } from "../../lib/tracing.ts";
import { ProviderRateLimitError, type RateLimitInfo } from "../../provider/index.ts";
import { LimiterScripts } from "./scripts.ts";
import { traceLimiterWait } from "./trace-wait.ts";

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
   * Spread bulk work's slots evenly over the window instead of granting every free slot at
   * once; see lua/includes/acquire-pacing.lua. LIMITER_PACE_BULK (true unless an operator
   * turns it off); required, so no caller gets a policy it did not choose.
   */
  paceBulk: boolean;
  /**
   * Slow start for live work: while no answer has told the limiter a store's budget, the first
   * live request goes alone and the others wait for its answer (at most `shortWaitMs`), so a
   * burst on an idle store another client shares does not meet 429s. LIMITER_LIVE_SLOW_START
   * (true unless an operator turns it off); required like `paceBulk`.
   */
  liveSlowStart: boolean;
  /** Random extra wait after a 429, so blocked workers do not return in one burst. */
  jitterMs?: number;
  prefix?: string;
}

export type Priority = "live" | "bulk";

export type Decision =
  | {
      granted: true;
      remaining: number;
      slotId: string;
      grantedAtMs: number;
      /** Granted to a caller that sends at once: the moment its request left (Redis's clock, µs). */
      sentAtUs?: string | undefined;
    }
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

/** The slot a `call` is spending, handed to its callback. */
export interface Slot {
  readonly id: string;
  /** When it was granted (Redis's clock, ms). */
  readonly grantedAtMs: number;
  /** What was left of the window after it. */
  readonly remaining: number;
}

export interface CallOptions {
  /**
   * Who queues for its own future slot when refused (a job id, or a name for the caller), so
   * that waiting callers wake one by one as slots free, not all together. "" (the default):
   * not in line.
   */
  waiter?: string;
  /** A slot granted to whoever queued the job (the backfill feeder), used once. */
  prepaidSlot?: string;
  /**
   * Waits in this process, for refusals and 429 blocks, up to this moment (Date.now(), ms;
   * Infinity: as long as it takes). Without it, only a refusal of at most `shortWaitMs` is
   * waited out, and a longer one or a 429 comes back as a `Wait` for the caller to park.
   */
  waitUntil?: number;
  /** Ends the in-process wait (an AbortError). */
  signal?: AbortSignal;
  /**
   * The request leaves the moment the slot is granted (nothing but in-process work between:
   * the sync job writes its intent before it asks): the grant marks it as leaving, and the
   * provider hook `beforeSend` has nothing left to do (one script call less per request).
   */
  sendsAtGrant?: boolean;
}

/** Why a `call` did not make its request, and when to try again. */
export interface Wait {
  /** A refusal's reason, or "rate-limited": the request got a 429 and the store is blocked. */
  reason: Refusal["reason"] | "rate-limited";
  /** When to come back (Redis's clock, ms). */
  retryAtMs: number;
  waitMs: number;
  /** How much earlier than `retryAtMs` a job parked in the queue should be handed back. */
  leadMs: number;
}

export type CallResult<T> = { done: true; value: T } | ({ done: false } & Wait);

type Refusal = Extract<Decision, { granted: false }>;

/** A slot whose request is being made, and when its answer came (this process's monotonic clock). */
interface SpentSlot {
  id: string;
  /** Its ledger, when known (SETTLE looks there first). */
  priority?: Priority | undefined;
  /** Its grant time (ms), when known: ANSWERED and SETTLE need not read it. */
  grantedAtMs?: number | undefined;
  /** The moment its request left (µs), when known (its grant or SENT told it). */
  sentAtUs?: string | undefined;
  answeredAt?: number;
  /**
   * The ANSWERED script(s) run at the answer: the slot is settled there and then, so `spend`
   * only waits for them (and settles itself only a request that got no answer).
   */
  answer?: Promise<unknown>;
  /** Marked as leaving by its grant (`sendsAtGrant`): `beforeSend` does nothing. */
  sent?: boolean;
}

/**
 * The per-store provider budget, shared by every worker process through Redis (ADR 0001).
 * Exact rolling window: no more than `limit` grants in any `windowMs` span as the server sees
 * them; one atomic script call per decision; a refusal says exactly when a slot frees, so the
 * caller can delay its job until then instead of polling.
 *
 * Callers use one door, `call`: it acquires a slot, runs the request in it, learns from the
 * answer, settles the slot and turns a 429 into a block. The provider client's two hooks
 * (`providerHooks`, wired once in engine/provider-clients.ts) are how the request and its
 * answer reach the slot `call` is spending.
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
  /** The slot of the request being made (see `spend`), for the provider hooks to place it. */
  readonly #slot = new AsyncLocalStorage<SpentSlot>();
  readonly #scripts: LimiterScripts;

  constructor(redis: RedisConnection, options: LimiterOptions) {
    this.#scripts = new LimiterScripts(redis, options.prefix ?? "connector");
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
    this.paceBulk = options.paceBulk;
    this.liveSlowStart = options.liveSlowStart;
    this.shortWaitMs = Math.min(1_000, Math.max(20, Math.ceil(options.windowMs / 5)));
    this.sharedHeadroom = Math.min(
      options.limit - 1,
      Math.ceil(options.limit * (options.sharedHeadroom ?? 0.02)),
    );
    this.#jitterMs = options.jitterMs ?? Math.min(1_000, Math.ceil(options.windowMs / 20));
  }

  /**
   * The one door: makes one provider request of a store within its budget.
   *
   * 1. A slot: `acquireOrWait` (a refusal of up to `shortWaitMs` is waited out here; `waiter`
   *    queues the caller for its own future slot; a prepaid slot is used once).
   * 2. `request(slot)` runs with the slot known to the provider client's hooks
   *    (`providerHooks`): its request is marked as sent just before it leaves, and the answer's
   *    RateLimit headers are read against it (`observe`).
   * 3. The slot is settled at the answer's moment, or at the failure (`spend`).
   * 4. A 429 (ProviderRateLimitError) blocks the store for every process until its Retry-After
   *    (`block`).
   *
   * A refusal or a 429 comes back as `{ done: false, retryAtMs, … }` unless `waitUntil` lets
   * the caller wait in the process, in which case it sleeps and tries again. Any other error
   * of the request is thrown, its slot settled.
   */
  async call<T>(
    storeId: number,
    priority: Priority,
    request: (slot: Slot) => Promise<T>,
    options: CallOptions = {},
  ): Promise<CallResult<T>> {
    // Traces on: the wait for the slot is a span of its own (trace-wait.ts).
    if (!tracingOn()) return this.#call(storeId, priority, request, options);
    return traceLimiterWait(storeId, priority, request, (traced) =>
      this.#call(storeId, priority, traced, options),
    );
  }

  async #call<T>(
    storeId: number,
    priority: Priority,
    request: (slot: Slot) => Promise<T>,
    options: CallOptions,
  ): Promise<CallResult<T>> {
    const { waiter = "", prepaidSlot = "", waitUntil, signal, sendsAtGrant = false } = options;
    const pause = async (wait: Wait): Promise<boolean> => {
      if (waitUntil === undefined || Date.now() + wait.waitMs > waitUntil) return false;
      await sleep(Math.max(1, wait.waitMs), undefined, signal ? { signal } : {});
      return true;
    };
    for (;;) {
      signal?.throwIfAborted();
      const decision = await this.acquireOrWait(
        storeId,
        priority,
        waiter,
        prepaidSlot,
        sendsAtGrant,
      );
      if (!decision.granted) {
        const { reason, retryAtMs, waitMs, leadMs } = decision;
        const wait: Wait = { reason, retryAtMs, waitMs, leadMs };
        if (await pause(wait)) continue;
        return { done: false, ...wait };
      }
      const slot: Slot = {
        id: decision.slotId,
        grantedAtMs: decision.grantedAtMs,
        remaining: decision.remaining,
      };
      try {
        return {
          done: true,
          value: await this.spend(storeId, slot.id, () => request(slot), priority, sendsAtGrant, {
            grantedAtMs: decision.grantedAtMs,
            sentAtUs: decision.sentAtUs,
          }),
        };
      } catch (error) {
        if (!(error instanceof ProviderRateLimitError)) throw error;
        const blocked = await this.#block(storeId, error.retryAfterMs ?? 1_000, slot.id);
        const wait: Wait = {
          reason: "rate-limited",
          retryAtMs: blocked.untilMs,
          waitMs: Math.max(0, blocked.untilMs - blocked.nowMs),
          leadMs: 0,
        };
        if (await pause(wait)) continue;
        return { done: false, ...wait };
      }
    }
  }

  /**
   * The provider client's hooks (ProviderClientOptions `beforeSend`, and `onResponse`'s rate
   * limit part): inside `call`, the slot's request is marked as sent just before it leaves, so
   * answers are read against the requests that left before it, and its answer is observed
   * against it. A response outside a slot (a call the limiter did not grant) is observed against
   * the ledger.
   */
  providerHooks(): {
    beforeSend(storeId: number): Promise<void>;
    answered(storeId: number, rateLimit: RateLimitInfo): Promise<number>;
  } {
    return {
      beforeSend: (storeId) => this.#sending(storeId),
      answered: (storeId, rateLimit) => this.observe(storeId, rateLimit),
    };
  }

  /** Whether a response from this store taught us its budget within the last window. */
  async knows(storeId: number): Promise<boolean> {
    return this.#scripts.known(storeId);
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
    sendsNow = false,
  ): Promise<Decision> {
    const slotId = randomUUID();
    const reply = await this.#scripts.acquire(storeId, {
      limit: this.limit,
      windowMs: this.windowMs,
      marginMs: this.marginMs,
      reserve: this.liveReserve,
      member: slotId,
      waiter,
      priority,
      prepaid,
      sharedHeadroom: this.sharedHeadroom,
      pace: this.paceBulk,
      again,
      probeMs: this.liveSlowStart ? this.shortWaitMs : 0,
      sendsNow,
    });
    if (reply.granted) {
      return {
        granted: true,
        remaining: reply.remaining,
        slotId,
        grantedAtMs: reply.timeMs,
        sentAtUs: reply.sentAtUs,
      };
    }
    const now = await this.nowMs();
    return {
      granted: false,
      retryAtMs: reply.timeMs,
      waitMs: Math.max(0, reply.timeMs - now),
      reason: reply.reason as Refusal["reason"],
      leadMs: Math.min(reply.leadMs, this.shortWaitMs / 2),
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
    sendsNow = false,
  ): Promise<Decision> {
    let decision = await this.acquire(storeId, priority, waiter, prepaid, false, sendsNow);
    for (let tries = 0; tries < 16; tries++) {
      if (decision.granted || decision.reason === "blocked") return decision;
      const { waitMs } = decision;
      if (waitMs > this.shortWaitMs) return decision;
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, waitMs)));
      decision = await this.acquire(storeId, priority, waiter, prepaid, true, sendsNow);
    }
    return decision;
  }

  /**
   * Makes the request of a granted slot: `request` runs with the slot known to the provider
   * hooks (the answer's RateLimit headers are read against the requests granted after it), and
   * the slot is settled on the answer or the failure, so it covers the request's real arrival.
   * Settled at the moment the answer came (`observe`), not when `request` returns: what the
   * caller does with the answer (writing its links) would otherwise keep the slot that much
   * longer, every window. `call` uses it (with what the grant told: `granted`); so do tests of
   * settling.
   */
  async spend<T>(
    storeId: number,
    slotId: string,
    request: () => Promise<T>,
    priority?: Priority,
    sent = false,
    granted: { grantedAtMs?: number | undefined; sentAtUs?: string | undefined } = {},
  ): Promise<T> {
    let failed = false;
    const slot: SpentSlot = { id: slotId, priority, sent, ...granted };
    try {
      return await this.#slot.run(slot, request);
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      // Settled at the answer (ANSWERED, run by the provider hook): only waited for here. A
      // request without an answer, or whose ANSWERED failed, is settled now. A settle that
      // fails (Redis away) leaves the slot at its grant time. After a failed call the call's
      // own error is the one the caller must see (a 429 must still block the store).
      const answered =
        slot.answer !== undefined &&
        (await slot.answer.then(
          () => true,
          () => false,
        ));
      if (!answered) {
        const ago = slot.answeredAt === undefined ? 0 : performance.now() - slot.answeredAt;
        await this.settle(storeId, slotId, ago, priority, slot.grantedAtMs).catch(
          (error: unknown) => {
            if (!failed) throw error;
          },
        );
      }
    }
  }

  /**
   * Just before a store's request leaves (the provider hook `beforeSend`): inside `spend`, the
   * slot's request is recorded as sent now, so answers are read against the requests that left
   * before it. Outside a slot it does nothing.
   */
  async #sending(storeId: number): Promise<void> {
    const spent = this.#slot.getStore();
    // (Marked by its grant: the caller sent it at once.)
    if (!spent || spent.sent) return;
    const left = await this.#scripts.sent(storeId, { member: spent.id });
    if (left !== undefined) spent.sentAtUs = left;
  }

  /**
   * After a request's answer or failure: its slot starts no earlier than the answer's moment
   * (now, or `answeredAgoMs` before now) less the margin, so a request that left late is never
   * forgotten before the server forgets it (see lua/settle-5.lua). `grantedAtMs`, when the
   * caller knows it, spares the script reading it.
   */
  async settle(
    storeId: number,
    slotId: string,
    answeredAgoMs = 0,
    priority?: Priority,
    grantedAtMs?: number,
  ): Promise<void> {
    await this.#scripts.settle(storeId, {
      member: slotId,
      marginMs: this.marginMs,
      windowMs: this.windowMs,
      answeredAgoMs: Math.max(0, Math.floor(answeredAgoMs)),
      priority,
      grantedAtMs,
    });
  }

  /** Gives a slot back when its request was never sent. */
  async release(storeId: number, slotId: string): Promise<void> {
    await this.#scripts.release(storeId, { member: slotId });
  }

  /**
   * Learns from RateLimit-* headers; only ever lowers our estimate of what is left. The server's
   * own limit bounds what it can report: a server whose budget is larger than ours says nothing
   * we do not know (but the store is still marked as learned), and one whose budget is smaller
   * than the configured limit (a misconfigured PROVIDER_RATE_LIMIT) is modelled with its own,
   * so the count of other clients' requests stays within what a window can hold. Inside
   * `spend`, the answer is read against the slot being spent.
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
    const remaining =
      info.remaining !== undefined && Number.isFinite(info.remaining) && info.remaining >= 0
        ? info.remaining
        : undefined;
    const serverLimit =
      info.limit !== undefined && Number.isFinite(info.limit) && info.limit > 0
        ? Math.min(this.limit, Math.floor(info.limit))
        : this.limit;
    if (slot) {
      // Inside `spend`: observed and settled in one script, now (ANSWERED).
      const answer = this.#scripts.answered(storeId, {
        limit: serverLimit,
        windowMs: this.windowMs,
        marginMs: this.marginMs,
        serverRemaining:
          remaining === undefined ? undefined : Math.min(serverLimit, Math.floor(remaining)),
        serverResetMs: Math.floor(info.resetMs ?? 0),
        slot: {
          member: slot.id,
          priority: slot.priority ?? "bulk",
          grantedAtMs: slot.grantedAtMs,
          sentAtUs: slot.sentAtUs,
        },
      });
      // A second answer for the slot (a request sent again after a 401) waits for the first.
      slot.answer = slot.answer ? Promise.all([slot.answer, answer]) : answer;
      return await answer;
    }
    if (remaining === undefined) return 0;
    return await this.#scripts.observe(storeId, {
      limit: serverLimit,
      windowMs: this.windowMs,
      marginMs: this.marginMs,
      serverRemaining: Math.min(serverLimit, Math.floor(remaining)),
      serverResetMs: Math.floor(info.resetMs ?? 0),
    });
  }

  /**
   * After a 429: the store is blocked for every process until Retry-After (+ jitter). `slotId`,
   * the refused request's slot, stays in the ledger but is no longer one the server counted.
   * Returns the block's end (ms).
   */
  async block(storeId: number, retryAfterMs: number, slotId = ""): Promise<number> {
    return (await this.#block(storeId, retryAfterMs, slotId)).untilMs;
  }

  #block(storeId: number, retryAfterMs: number, slotId: string) {
    return this.#scripts.block(storeId, {
      retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)),
      jitterMs: this.#jitterMs,
      refusedSlot: slotId,
    });
  }

  /** A read-only look at a store's budget (for status pages): nothing is removed or added. */
  async inspect(storeId: number): Promise<LimiterInspection> {
    const r = await this.#scripts.inspect(storeId, {
      windowMs: this.windowMs,
      marginMs: this.marginMs,
    });
    return {
      limit: this.limit,
      windowMs: this.windowMs,
      used: r.used,
      remaining: Math.max(0, this.limit - r.used),
      blockedUntil: r.blockedUntil > r.nowMs ? r.blockedUntil : null,
      nextFreeAt: r.oldestMs >= 0 ? r.oldestMs + this.windowMs + this.marginMs : null,
      waiting: { live: r.liveWaiting, bulk: r.bulkWaiting },
    };
  }

  /** Redis's clock (ms), the one every worker process decides against. */
  async nowMs(): Promise<number> {
    return await this.#scripts.now();
  }
}
