import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { StoreRateLimiter } from "../../../src/engine/limiter/index.ts";
import { service } from "../../helpers/services.ts";

const redis = new Redis(service("redisUrl"));
afterAll(() => redis.disconnect());

describe("StoreRateLimiter.inspect", () => {
  it("reports used, remaining, the next free moment, blocks and waiters", async () => {
    const prefix = `t-${randomUUID()}`;
    const limiter = new StoreRateLimiter(redis, {
      limit: 3,
      windowMs: 10_000,
      marginMs: 50,
      jitterMs: 0,
      paceBulk: true,
      // Slow start off (LIMITER_LIVE_SLOW_START=false): the burst fills the window at once.
      liveSlowStart: false,
      prefix,
    });
    expect(await limiter.inspect(1001)).toMatchObject({
      limit: 3,
      used: 0,
      remaining: 3,
      blockedUntil: null,
      nextFreeAt: null,
      waiting: { live: 0, bulk: 0 },
    });
    const first = await limiter.acquire(1001);
    await limiter.acquire(1001);
    await limiter.acquire(1001);
    const refused = await limiter.acquire(1001, "live", "job-7");
    expect(refused.granted).toBe(false);
    const seen = await limiter.inspect(1001);
    expect(seen).toMatchObject({ used: 3, remaining: 0, waiting: { live: 1, bulk: 0 } });
    expect(seen.nextFreeAt).toBe((first.granted ? first.grantedAtMs : 0) + 10_050);

    const until = await limiter.block(1001, 5_000);
    expect((await limiter.inspect(1001)).blockedUntil).toBe(until);
    // Another store is untouched.
    expect((await limiter.inspect(1002)).used).toBe(0);
  });

  it("writes nothing: expired slots stay in Redis until a real decision removes them", async () => {
    const prefix = `t-${randomUUID()}`;
    const limiter = new StoreRateLimiter(redis, {
      limit: 5,
      windowMs: 100,
      marginMs: 0,
      paceBulk: true,
      liveSlowStart: false,
      prefix,
    });
    await limiter.acquire(7);
    await limiter.acquire(7);
    const key = `${prefix}:limiter:{7}:slots:live`;
    // The key's own TTL (two windows) must not be what removes the slots in a slow run.
    await redis.persist(key);
    // Once the window has passed, inspecting counts none of them, however often it is asked…
    await expect.poll(async () => (await limiter.inspect(7)).used).toBe(0);
    // …and has removed none.
    expect(await redis.zcard(key)).toBe(2);
    expect((await limiter.inspect(7)).used).toBe(0);
    expect(await redis.zcard(key)).toBe(2);
  });
});
