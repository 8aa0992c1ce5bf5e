import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { StoreRateLimiter } from "../../../src/engine/limiter/index.ts";
import { service } from "../../helpers/services.ts";

const connections: Redis[] = [];
const connect = () => {
  const r = new Redis(service("redisUrl"));
  connections.push(r);
  return r;
};
afterAll(() => {
  for (const r of connections) r.disconnect();
});
const limiterFor = (
  options: {
    limit: number;
    windowMs: number;
    marginMs?: number;
    bulkReserve?: number;
    sharedHeadroom?: number;
    paceBulk?: boolean;
  },
  redis = connect(),
  prefix = `t-${randomUUID()}`,
  // Pacing (LIMITER_PACE_BULK) spreads bulk grants over the window and slow start
  // (LIMITER_LIVE_SLOW_START) holds a first burst back: both settings are off here, as an
  // operator may set them, since most tests look at other rules in one burst.
) =>
  new StoreRateLimiter(redis, {
    jitterMs: 0,
    paceBulk: false,
    liveSlowStart: false,
    ...options,
    prefix,
  });

describe("StoreRateLimiter", () => {
  it("grants exactly the limit in a burst and says when the next slot frees", async () => {
    const limiter = limiterFor({ limit: 5, windowMs: 10_000, marginMs: 50 });
    const grants = [];
    for (let i = 0; i < 5; i++) grants.push(await limiter.acquire(1001));
    expect(grants.every((g) => g.granted)).toBe(true);
    const first = await limiter.inspect(1001);
    const refused = await limiter.acquire(1001);
    expect(refused.granted).toBe(false);
    if (refused.granted) return;
    expect(refused.reason).toBe("window");
    expect(refused.retryAtMs).toBe(first.nextFreeAt);
    expect(refused.waitMs).toBeGreaterThan(9_000);
  });

  it("is a rolling window: a slot returns exactly when its grant leaves the window", async () => {
    const limiter = limiterFor({ limit: 3, windowMs: 300, marginMs: 10 });
    await limiter.acquire(1);
    await new Promise((r) => setTimeout(r, 150));
    await limiter.acquire(1);
    await limiter.acquire(1);
    expect((await limiter.acquire(1)).granted).toBe(false);
    await new Promise((r) => setTimeout(r, 180));
    // Only the first grant has left the window.
    expect((await limiter.acquire(1)).granted).toBe(true);
    expect((await limiter.acquire(1)).granted).toBe(false);
  });

  it("never grants more than the limit in any window across many connections, and nearly all it may", async () => {
    const prefix = `t-${randomUUID()}`;
    const windowMs = 400;
    const limiters = Array.from({ length: 8 }, () =>
      limiterFor({ limit: 10, windowMs, marginMs: 5 }, connect(), prefix),
    );
    const clock = limiterFor({ limit: 10, windowMs }, connect(), prefix);
    const grants: number[] = [];
    const start = await clock.nowMs();
    const deadline = start + windowMs * 3;
    await Promise.all(
      limiters.map(async (limiter) => {
        while ((await limiter.nowMs()) < deadline) {
          const decision = await limiter.acquire(7);
          if (decision.granted) grants.push(decision.grantedAtMs);
          else await new Promise((r) => setTimeout(r, Math.min(decision.waitMs, 20)));
        }
      }),
    );
    grants.sort((a, b) => a - b);
    let maxInWindow = 0;
    for (let i = 0, j = 0; i < grants.length; i++) {
      while ((grants[i] as number) - (grants[j] as number) >= windowMs) j++;
      maxInWindow = Math.max(maxInWindow, i - j + 1);
    }
    expect(maxInWindow).toBe(10);
    expect(grants.length).toBeGreaterThanOrEqual(28);
    expect(grants.length).toBeLessThanOrEqual(40);
  });

  it("keeps a reserve for live work that backfill cannot use", async () => {
    const limiter = limiterFor({ limit: 10, windowMs: 10_000, bulkReserve: 0.2 });
    let bulk = 0;
    for (let i = 0; i < 12; i++) if ((await limiter.acquire(3, "bulk")).granted) bulk++;
    expect(bulk).toBe(8);
    const refused = await limiter.acquire(3, "bulk");
    expect(refused.granted ? "granted" : refused.reason).toBe("reserved");
    expect((await limiter.acquire(3, "live")).granted).toBe(true);
    expect((await limiter.acquire(3, "live")).granted).toBe(true);
    const full = await limiter.acquire(3, "live");
    expect(full.granted ? "granted" : full.reason).toBe("window");
  });

  it("lets live orders add to a window backfill has filled, instead of taking backfill's share", async () => {
    const limiter = limiterFor({ limit: 10, windowMs: 10_000, bulkReserve: 0.2 });
    for (let i = 0; i < 2; i++) expect((await limiter.acquire(3, "live")).granted).toBe(true);
    let bulk = 0;
    for (let i = 0; i < 10; i++) if ((await limiter.acquire(3, "bulk")).granted) bulk++;
    // The reserve is counted against bulk work only: the two live slots did not shrink it.
    expect(bulk).toBe(8);
    expect((await limiter.inspect(3)).used).toBe(10);
    const full = await limiter.acquire(3, "live");
    expect(full.granted ? "granted" : full.reason).toBe("window");
  });

  it("lets live work use what backfill leaves, beyond its reserve", async () => {
    const limiter = limiterFor({ limit: 10, windowMs: 10_000, bulkReserve: 0.2 });
    for (let i = 0; i < 7; i++) expect((await limiter.acquire(4, "live")).granted).toBe(true);
    let bulk = 0;
    for (let i = 0; i < 5; i++) if ((await limiter.acquire(4, "bulk")).granted) bulk++;
    expect(bulk).toBe(3);
  });

  it("leaves headroom to backfill only while another client is seen spending the budget", async () => {
    const alone = limiterFor({ limit: 10, windowMs: 10_000, bulkReserve: 0, sharedHeadroom: 0.2 });
    let granted = 0;
    for (let i = 0; i < 12; i++) if ((await alone.acquire(21, "bulk")).granted) granted++;
    expect(granted).toBe(10);

    const shared = limiterFor({ limit: 10, windowMs: 10_000, bulkReserve: 0, sharedHeadroom: 0.2 });
    for (let i = 0; i < 3; i++) {
      const slot = await shared.acquire(22, "bulk");
      if (slot.granted) await shared.settle(22, slot.slotId);
    }
    // The server counts 5: another client made 2 we could not see.
    expect(await shared.observe(22, { remaining: 5, resetMs: 9_000 })).toBe(2);
    granted = 0;
    for (let i = 0; i < 5; i++) if ((await shared.acquire(22, "bulk")).granted) granted++;
    // 10 - 2 headroom = 8 in all: 3 before, 2 of the other client's, 3 now.
    expect(granted).toBe(3);
    expect((await shared.inspect(22)).used).toBe(8);
    // A live order may still use the headroom.
    expect((await shared.acquire(22, "live")).granted).toBe(true);
  });

  it("keeps more headroom the longer another client's store has not answered", async () => {
    const options = { limit: 10, windowMs: 2_000, bulkReserve: 0, sharedHeadroom: 0 };
    const fresh = limiterFor(options);
    // Another client made 4 requests in the window.
    expect(await fresh.observe(24, { remaining: 6, resetMs: 1_500 })).toBe(4);
    let granted = 0;
    for (let i = 0; i < 8; i++) if ((await fresh.acquire(24, "live")).granted) granted++;
    expect(granted).toBe(6);

    const stale = limiterFor(options);
    expect(await stale.observe(25, { remaining: 6, resetMs: 1_500 })).toBe(4);
    await new Promise((r) => setTimeout(r, 1_000));
    granted = 0;
    for (let i = 0; i < 8; i++) if ((await stale.acquire(25, "live")).granted) granted++;
    // Half a window without an answer: about 2 more of its requests are expected, unseen.
    expect(granted).toBe(4);
  });

  it("tells refused backfill when a slot of bulk work frees, not when a live one does", async () => {
    const prefix = `t-${randomUUID()}`;
    const redis = connect();
    const limiter = limiterFor(
      { limit: 4, windowMs: 10_000, marginMs: 0, bulkReserve: 0.5 },
      redis,
      prefix,
    );
    expect((await limiter.acquire(23, "live")).granted).toBe(true);
    await new Promise((r) => setTimeout(r, 30));
    for (let i = 0; i < 2; i++) expect((await limiter.acquire(23, "bulk")).granted).toBe(true);
    const refused = await limiter.acquire(23, "bulk");
    expect(refused.granted ? "granted" : refused.reason).toBe("reserved");
    const bulkScores = (await redis.zrange(`${prefix}:limiter:{23}:slots`, "0", "-1", "WITHSCORES"))
      .filter((_, i) => i % 2 === 1)
      .map(Number);
    // The live slot is older and frees first, but only a bulk slot freeing makes room.
    if (!refused.granted) expect(refused.retryAtMs).toBe((bulkScores[0] as number) + 10_000);
  });

  it("spreads bulk slots evenly over the window, with a burst of two intervals", async () => {
    const limiter = limiterFor({ limit: 10, windowMs: 1_000, bulkReserve: 0, paceBulk: true });
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.acquire(26, "bulk"));
    const [first] = decisions;
    if (!first?.granted) throw new Error("expected a grant");
    // One interval is window / limit = 100 ms: the first grant and two early ones.
    expect(decisions.map((d) => d.granted)).toEqual([true, true, true, false, false]);
    const paced = decisions[3];
    if (!paced || paced.granted) throw new Error("expected a refusal");
    expect(paced.reason).toBe("paced");
    expect(paced.retryAtMs - first.grantedAtMs).toBeGreaterThanOrEqual(100);
    expect(paced.retryAtMs - first.grantedAtMs).toBeLessThanOrEqual(101);
    // Live work is never paced.
    expect((await limiter.acquire(26, "live")).granted).toBe(true);
    await new Promise((r) => setTimeout(r, paced.waitMs + 5));
    expect((await limiter.acquire(26, "bulk")).granted).toBe(true);
    expect((await limiter.acquire(26, "bulk")).granted).toBe(false);
  });

  it("paces bulk work at the share other clients leave it", async () => {
    const limiter = limiterFor({
      limit: 10,
      windowMs: 1_000,
      bulkReserve: 0,
      sharedHeadroom: 0,
      paceBulk: true,
    });
    expect(await limiter.observe(27, { remaining: 5, resetMs: 900 })).toBe(5);
    const first = await limiter.acquire(27, "bulk");
    if (!first.granted) throw new Error("expected a grant");
    await limiter.acquire(27, "bulk");
    await limiter.acquire(27, "bulk");
    const paced = await limiter.acquire(27, "bulk");
    // Five slots left to bulk work in a window of 1,000 ms: one per 200 ms.
    if (paced.granted) throw new Error("expected a refusal");
    expect(paced.retryAtMs - first.grantedAtMs).toBeGreaterThanOrEqual(200);
    expect(paced.retryAtMs - first.grantedAtMs).toBeLessThanOrEqual(201);
  });

  it("lowers its estimate when the server reports less left, and never raises it", async () => {
    const limiter = limiterFor({ limit: 10, windowMs: 10_000 });
    await limiter.acquire(4);
    expect(await limiter.observe(4, { remaining: 5, resetMs: 4_000 })).toBe(4);
    expect((await limiter.inspect(4)).remaining).toBe(5);
    expect(await limiter.observe(4, { remaining: 9, resetMs: 4_000 })).toBe(0);
    expect((await limiter.inspect(4)).remaining).toBe(5);
    expect(await limiter.observe(4, { remaining: undefined, resetMs: 1 })).toBe(0);
  });

  it("blocks a store for every process after a 429, and only that store", async () => {
    const prefix = `t-${randomUUID()}`;
    const a = limiterFor({ limit: 10, windowMs: 10_000 }, connect(), prefix);
    const b = limiterFor({ limit: 10, windowMs: 10_000 }, connect(), prefix);
    const until = await a.block(5, 2_000);
    const seen = await b.acquire(5);
    expect(seen.granted ? "granted" : seen.reason).toBe("blocked");
    if (!seen.granted) expect(seen.retryAtMs).toBe(until);
    expect((await b.acquire(6)).granted).toBe(true);
    expect((await b.inspect(5)).blockedUntil).toBe(until);
  });

  it("lets idle stores vanish from Redis", async () => {
    const prefix = `t-${randomUUID()}`;
    const redis = connect();
    const limiter = limiterFor({ limit: 10, windowMs: 1_000 }, redis, prefix);
    await limiter.acquire(9);
    // A ledger's expiry is twice the life of what it holds (two windows and the margin), set
    // where it may be new and renewed once that life is all that is left, not on every grant.
    const ttl = await redis.pttl(`${prefix}:limiter:{9}:slots:live`);
    expect(ttl).toBeGreaterThan(2_000 + 25);
    expect(ttl).toBeLessThanOrEqual(2 * (2_000 + 25));
    // Every key of the store expires.
    const keys = await redis.keys(`${prefix}:limiter:{9}:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(await redis.pttl(key), key).toBeGreaterThan(0);
  });

  it("counts bulk slots again once bulk work starts on a store that had only live work", async () => {
    const limiter = limiterFor({ limit: 10, windowMs: 10_000 });
    // A live grant on a store without bulk work records that its bulk ledger is empty.
    let granted = (await limiter.acquire(14)).granted ? 1 : 0;
    for (let i = 0; i < 20; i++) if ((await limiter.acquire(14, "bulk")).granted) granted++;
    for (let i = 0; i < 20; i++) if ((await limiter.acquire(14)).granted) granted++;
    expect(granted).toBe(10);
    expect((await limiter.inspect(14)).used).toBe(10);
  });

  it("never leaves a key without expiry: a ledger emptied and made again, a prepaid slot, a long block", async () => {
    const prefix = `t-${randomUUID()}`;
    const redis = connect();
    const limiter = limiterFor({ limit: 10, windowMs: 1_000 }, redis, prefix);
    const everyKeyExpires = async (store: number) => {
      const keys = await redis.keys(`${prefix}:limiter:{${store}}:*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(await redis.pttl(key), key).toBeGreaterThan(0);
    };
    // The ledger's expiry is recorded as fresh; a release empties it (Redis deletes an empty
    // set) and the next grant makes it again.
    const first = await limiter.acquire(11);
    if (!first.granted) throw new Error("expected a grant");
    await limiter.release(11, first.slotId);
    expect(await redis.exists(`${prefix}:limiter:{11}:slots:live`)).toBe(0);
    expect((await limiter.acquire(11)).granted).toBe(true);
    await everyKeyExpires(11);
    // A prepaid slot, the only one in its ledger, renamed when its job uses it.
    const prepaid = await limiter.acquire(12, "bulk");
    if (!prepaid.granted) throw new Error("expected a grant");
    const used = await limiter.acquire(12, "bulk", "", prepaid.slotId);
    expect(used.granted).toBe(true);
    await everyKeyExpires(12);
    // A Retry-After far longer than the state's usual expiry (twenty windows): the block lasts.
    const until = await limiter.block(13, 60_000);
    expect(await redis.pttl(`${prefix}:limiter:{13}:lag`)).toBeGreaterThan(55_000);
    await limiter.observe(13, { remaining: 9, resetMs: 1_000 });
    expect(await redis.pttl(`${prefix}:limiter:{13}:lag`)).toBeGreaterThan(55_000);
    expect((await limiter.inspect(13)).blockedUntil).toBe(until);
    await everyKeyExpires(13);
  });
});

describe("StoreRateLimiter waiters", () => {
  it("gives each refused job its own future slot, in turn, instead of one moment for all", async () => {
    const prefix = `t-${randomUUID()}`;
    const limiter = limiterFor({ limit: 3, windowMs: 10_000, marginMs: 0 }, connect(), prefix);
    for (let i = 0; i < 3; i++) await limiter.acquire(1, "live", `job-${i}`);
    const refused = [];
    for (let i = 3; i < 9; i++) refused.push(await limiter.acquire(1, "live", `job-${i}`));
    const times = refused.map((d) => (d.granted ? 0 : d.retryAtMs));
    const redis = connect();
    const scores = (await redis.zrange(`${prefix}:limiter:{1}:slots:live`, "0", "-1", "WITHSCORES"))
      .filter((_, i) => i % 2 === 1)
      .map(Number);
    // Waiter k gets the slot of grant k mod 3, one window later per full round.
    expect(times).toEqual(
      refused.map((_, k) => (scores[k % 3] as number) + 10_000 * (1 + Math.floor(k / 3))),
    );
  });

  it("lets a due waiter take its slot before a newcomer", async () => {
    const limiter = limiterFor({ limit: 1, windowMs: 200, marginMs: 0 });
    expect((await limiter.acquire(2, "live", "a")).granted).toBe(true);
    const wait = await limiter.acquire(2, "live", "b");
    expect(wait.granted).toBe(false);
    if (wait.granted) return;
    await new Promise((r) => setTimeout(r, wait.waitMs + 20));
    expect((await limiter.acquire(2, "live", "newcomer")).granted).toBe(false);
    expect((await limiter.acquire(2, "live", "b")).granted).toBe(true);
  });
});

describe("StoreRateLimiter priorities", () => {
  it("puts a refused live job ahead of every waiting backfill job", async () => {
    const limiter = limiterFor({ limit: 2, windowMs: 10_000, marginMs: 0, bulkReserve: 0 });
    await limiter.acquire(8, "bulk", "b0");
    await new Promise((r) => setTimeout(r, 5));
    await limiter.acquire(8, "bulk", "b1");
    const bulk = await limiter.acquire(8, "bulk", "b2");
    const bulk2 = await limiter.acquire(8, "bulk", "b3");
    const live = await limiter.acquire(8, "live", "l0");
    if (bulk.granted || bulk2.granted || live.granted) throw new Error("expected refusals");
    // The live job gets the first slot to free, the one the first backfill waiter was told of.
    expect(live.retryAtMs).toBe(bulk.retryAtMs);
    expect(live.retryAtMs).toBeLessThan(bulk2.retryAtMs);
  });
});

describe("StoreRateLimiter.spend", () => {
  it("settles the slot at the moment the answer came, not when the caller is done with it", async () => {
    const limiter = limiterFor({ limit: 5, windowMs: 10_000, marginMs: 5 });
    const slot = await limiter.acquire(9);
    if (!slot.granted) throw new Error("expected a grant");
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    await limiter.spend(9, slot.slotId, async () => {
      await sleep(60);
      // The answer: the server counted the request before it sent this.
      await limiter.observe(9, {});
      // What the caller then does with it (writing its links) is not the server's business.
      await sleep(1_500);
    });
    // (nextFreeAt is the slot's start plus 10 s of window and 5 ms of margin.) Settled at the
    // answer, about 55 ms after the grant; at the end of the call it would be past 1,500 ms.
    // The bound between leaves a loaded machine a second to answer in.
    const start = ((await limiter.inspect(9)).nextFreeAt ?? 0) - 10_005 - slot.grantedAtMs;
    expect(start).toBeGreaterThanOrEqual(50);
    expect(start).toBeLessThan(1_000);
  });

  it("settles the slot at the answer, and lets the call's error through when Redis fails too", async () => {
    const redis = connect();
    const limiter = limiterFor({ limit: 5, windowMs: 10_000, marginMs: 5 }, redis);
    const slot = await limiter.acquire(9);
    if (!slot.granted) throw new Error("expected a grant");
    await limiter.spend(9, slot.slotId, () => new Promise((r) => setTimeout(r, 60)));
    // Settled at the answer: the slot now starts about 55 ms after its grant.
    // (nextFreeAt is the slot's start plus 10 s of window and 5 ms of margin.)
    expect(
      ((await limiter.inspect(9)).nextFreeAt ?? 0) - 10_005 - slot.grantedAtMs,
    ).toBeGreaterThanOrEqual(50);

    const second = await limiter.acquire(9);
    if (!second.granted) throw new Error("expected a grant");
    class RateLimited extends Error {}
    // The call fails (a 429) and Redis goes away before the slot can be settled: the caller
    // sees the 429, not the connection error.
    await expect(
      limiter.spend(9, second.slotId, async () => {
        redis.disconnect();
        throw new RateLimited("429");
      }),
    ).rejects.toBeInstanceOf(RateLimited);
  });

  it("starts the settle average again from zero at an answer on time while nobody waits", async () => {
    const redis = connect();
    const prefix = `t-${randomUUID()}`;
    // A margin of a second: an answer "on time" stays on time on a loaded machine, where a
    // few milliseconds between the grant and the answer could pass the margin.
    const limiter = limiterFor({ limit: 2, windowMs: 10_000, marginMs: 1_000 }, redis, prefix);
    const average = async (store: number) =>
      Number(await redis.hget(`${prefix}:limiter:{${store}}:lag`, "settle"));
    const granted = async (store: number) => {
      const slot = await limiter.acquire(store);
      if (!slot.granted) throw new Error("expected a grant");
      return slot.slotId;
    };
    const slow = async (store: number) =>
      limiter.spend(store, await granted(store), () => new Promise((r) => setTimeout(r, 1_060)));
    // A slow answer (60 ms past the margin) moves the average up.
    await slow(31);
    expect(await average(31)).toBeGreaterThan(5);
    // Nobody in line: the next answer on time starts it again (one write, not one per answer
    // while it decays); the average only serves promises to waiters.
    await limiter.spend(31, await granted(31), async () => {});
    expect(await average(31)).toBe(0);
    // With a waiter in line it decays, an eighth at a time, as the line's promises need.
    await slow(32);
    const moved = await average(32);
    const last = await granted(32);
    expect((await limiter.acquire(32, "live", "a-waiter")).granted).toBe(false);
    await limiter.spend(32, last, async () => {});
    expect(await average(32)).toBeCloseTo((moved * 7) / 8, 6);
  });
});
