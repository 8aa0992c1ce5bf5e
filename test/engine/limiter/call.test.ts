import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { type Slot, StoreRateLimiter } from "../../../src/engine/limiter/index.ts";
import { ProviderRateLimitError } from "../../../src/provider/index.ts";
import { service } from "../../helpers/services.ts";

const redis = new Redis(service("redisUrl"));
afterAll(() => redis.disconnect());

const limiterFor = (options: { limit: number; windowMs: number }, prefix = `t-${randomUUID()}`) =>
  new StoreRateLimiter(redis, {
    jitterMs: 0,
    marginMs: 5,
    paceBulk: true,
    liveSlowStart: true,
    ...options,
    prefix,
  });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tooMany = (retryAfterMs: number) =>
  new ProviderRateLimitError("429 Too Many Requests", {
    status: 429,
    method: "POST",
    path: "/orders",
    retryAfterMs,
  });

describe("StoreRateLimiter.call, the one door", () => {
  it("runs the request in a granted slot and returns its value", async () => {
    const limiter = limiterFor({ limit: 5, windowMs: 10_000 });
    const seen: Slot[] = [];
    const result = await limiter.call(1, "live", async (slot) => {
      seen.push(slot);
      return "answer";
    });
    expect(result).toEqual({ done: true, value: "answer" });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.remaining).toBe(4);
    expect((await limiter.inspect(1)).used).toBe(1);
  });

  it("turns a 429 into a block of the store for every process, and returns when to retry", async () => {
    const prefix = `t-${randomUUID()}`;
    const limiter = limiterFor({ limit: 5, windowMs: 10_000 }, prefix);
    const other = limiterFor({ limit: 5, windowMs: 10_000 }, prefix);
    const before = await limiter.nowMs();
    const result = await limiter.call(2, "live", async () => {
      throw tooMany(2_000);
    });
    if (result.done) throw new Error("expected a wait");
    expect(result.reason).toBe("rate-limited");
    expect(result.retryAtMs).toBeGreaterThanOrEqual(before + 2_000);
    expect(result.waitMs).toBeGreaterThan(1_900);
    expect(result.leadMs).toBe(0);
    // Another process sees the block and is refused until it ends.
    expect((await other.inspect(2)).blockedUntil).toBe(result.retryAtMs);
    const refused = await other.call(2, "live", async () => "never");
    expect(refused).toMatchObject({ done: false, reason: "blocked", retryAtMs: result.retryAtMs });
  });

  it("reads the answer's RateLimit headers against the slot it spends, and settles it at the answer", async () => {
    const prefix = `t-${randomUUID()}`;
    const limiter = limiterFor({ limit: 10, windowMs: 10_000 }, prefix);
    const hooks = limiter.providerHooks();
    let learned = -1;
    let granted = 0;
    await limiter.call(3, "live", async (slot) => {
      granted = slot.grantedAtMs;
      // What the provider client does around its request: marks it sent, reads the answer.
      await hooks.beforeSend(3);
      await sleep(60);
      learned = await hooks.answered(3, { limit: 10, remaining: 5, resetMs: 9_000 });
      // What the caller then does with the answer does not keep the slot.
      await sleep(1_500);
    });
    // The server counts 5, we made 1: another client made 4.
    expect(learned).toBe(4);
    const inspection = await limiter.inspect(3);
    expect(inspection.used).toBe(5);
    // Settled at the answer (about 60 ms after the grant), not when the request returned (past
    // 1,500 ms); the bound between leaves a loaded machine a second to answer in.
    const slotStart = Math.max(
      ...(await redis.zrange(`${prefix}:limiter:{3}:slots:live`, "0", "-1", "WITHSCORES"))
        .filter((_, i) => i % 2 === 1)
        .map(Number),
    );
    expect(slotStart - granted).toBeGreaterThanOrEqual(50);
    expect(slotStart - granted).toBeLessThan(1_000);
  });

  it("lets a request's other error through, with its slot settled and no longer pending", async () => {
    const prefix = `t-${randomUUID()}`;
    const limiter = limiterFor({ limit: 5, windowMs: 10_000 }, prefix);
    let granted = 0;
    let slotId = "";
    await expect(
      limiter.call(4, "bulk", async (slot) => {
        granted = slot.grantedAtMs;
        slotId = slot.id;
        expect(await redis.zscore(`${prefix}:limiter:{4}:inflight`, slotId)).not.toBeNull();
        await sleep(60);
        throw new Error("connection reset");
      }),
    ).rejects.toThrow("connection reset");
    expect(await redis.zscore(`${prefix}:limiter:{4}:inflight`, slotId)).toBeNull();
    const [, start] = await redis.zrange(`${prefix}:limiter:{4}:slots`, "0", "0", "WITHSCORES");
    // Settled at the failure, less the margin: about 55 ms after its grant.
    expect(Number(start) - granted).toBeGreaterThanOrEqual(50);
    expect((await limiter.inspect(4)).blockedUntil).toBeNull();
  });

  it("waits in the process until `waitUntil`, and gives the wait back past it", async () => {
    const limiter = limiterFor({ limit: 1, windowMs: 2_000 });
    expect(await limiter.call(5, "live", async () => 1)).toEqual({ done: true, value: 1 });
    // The next slot frees in about 2 s: a caller that may wait 50 ms gets the wait back.
    const soon = await limiter.call(5, "live", async () => 2, { waitUntil: Date.now() + 50 });
    expect(soon).toMatchObject({ done: false, reason: "window" });
    if (!soon.done) expect(soon.waitMs).toBeGreaterThan(1_500);
    // One that may wait 5 s sleeps until the slot frees and makes its request.
    const started = Date.now();
    const later = await limiter.call(5, "live", async () => 3, { waitUntil: Date.now() + 5_000 });
    expect(later).toEqual({ done: true, value: 3 });
    expect(Date.now() - started).toBeGreaterThan(1_500);
  });

  it("stops waiting when its signal aborts", async () => {
    const limiter = limiterFor({ limit: 1, windowMs: 10_000 });
    await limiter.call(6, "bulk", async () => 1);
    const abort = new AbortController();
    const waiting = limiter.call(6, "bulk", async () => 2, {
      waitUntil: Number.POSITIVE_INFINITY,
      signal: abort.signal,
    });
    abort.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
  });
});
