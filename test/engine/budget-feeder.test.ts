import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { feedAtBudget } from "../../src/engine/budget-feeder.ts";
import { StoreRateLimiter } from "../../src/engine/limiter/index.ts";
import { OrderQueues } from "../../src/queue/order-queues.ts";
import { service } from "../helpers/services.ts";

const connections: Redis[] = [];
const queues: OrderQueues[] = [];
const connect = () => {
  const r = new Redis(service("redisUrl"), { maxRetriesPerRequest: null });
  connections.push(r);
  return r;
};
afterAll(async () => {
  for (const q of queues) {
    await q.sync.obliterate({ force: true });
    await q.close();
  }
  for (const r of connections) r.disconnect();
});

function setup(options: {
  limit: number;
  windowMs: number;
  bulkReserve?: number;
  marginMs?: number;
  paceBulk?: boolean;
}) {
  const prefix = `t-${randomUUID()}`;
  const redis = connect();
  // LIMITER_PACE_BULK and LIMITER_LIVE_SLOW_START off, as an operator may set them, so the
  // feeder's own rules show in one burst; the pacing test turns LIMITER_PACE_BULK back on.
  const limiter = new StoreRateLimiter(redis, {
    jitterMs: 0,
    marginMs: 5,
    paceBulk: false,
    liveSlowStart: false,
    ...options,
    prefix,
  });
  const q = new OrderQueues(redis, prefix);
  queues.push(q);
  return { limiter, queues: q };
}

const item = (orderId: string) => ({
  shop: "feed-shop.myshopify.com",
  orderId,
  trigger: "backfill" as const,
  receivedAt: Date.now(),
});

describe("prepaid slots", () => {
  it("spends a prepaid slot once, without counting it twice", async () => {
    const { limiter } = setup({ limit: 3, windowMs: 10_000 });
    const paid = await limiter.acquire(7, "bulk");
    if (!paid.granted) throw new Error("expected a grant");
    expect((await limiter.inspect(7)).used).toBe(1);

    const first = await limiter.acquire(7, "bulk", "job-1", paid.slotId);
    expect(first).toMatchObject({ granted: true });
    // Still one slot: the prepaid one was moved, not added to.
    expect((await limiter.inspect(7)).used).toBe(1);

    // The same job running again (a retry after a crash) cannot spend it again.
    await limiter.acquire(7, "bulk", "job-1", paid.slotId);
    expect((await limiter.inspect(7)).used).toBe(2);
  });

  it("asks the window again when the prepaid slot has expired", async () => {
    const { limiter } = setup({ limit: 1, windowMs: 100 });
    const paid = await limiter.acquire(8, "live");
    if (!paid.granted) throw new Error("expected a grant");
    await new Promise((r) => setTimeout(r, 150));
    const other = await limiter.acquire(8, "live");
    expect(other.granted).toBe(true);
    // The old slot is gone and the window is full again: the job must wait like any other.
    const late = await limiter.acquire(8, "live", "job-2", paid.slotId);
    expect(late).toMatchObject({ granted: false, reason: "window" });
  });

  it("restarts a prepaid slot's life when it is used, so a late job never undercounts", async () => {
    const { limiter } = setup({ limit: 1, windowMs: 300 });
    const paid = await limiter.acquire(9, "live");
    if (!paid.granted) throw new Error("expected a grant");
    await new Promise((r) => setTimeout(r, 200));
    const used = await limiter.acquire(9, "live", "job-3", paid.slotId);
    if (!used.granted) throw new Error("expected the prepaid slot");
    await new Promise((r) => setTimeout(r, 150));
    // 350 ms after the first grant but 150 ms after the request left: still occupied.
    expect((await limiter.acquire(9, "live")).granted).toBe(false);
  });
});

describe("observe", () => {
  it("counts other clients against the server's own limit when it is below ours", async () => {
    const { limiter } = setup({ limit: 100, windowMs: 10_000 });
    for (let i = 0; i < 3; i++) {
      const slot = await limiter.acquire(31, "live");
      if (slot.granted) await limiter.settle(31, slot.slotId);
    }
    // The server allows only 10 and has 2 left: other clients made 5, not 95.
    expect(await limiter.observe(31, { limit: 10, remaining: 2, resetMs: 1_000 })).toBe(5);
    expect((await limiter.inspect(31)).used).toBe(8);
  });

  it("does not let our requests still in flight hide the other client's", async () => {
    const { limiter } = setup({ limit: 10, windowMs: 10_000 });
    const answered = await limiter.acquire(33, "live");
    if (!answered.granted) throw new Error("expected a grant");
    for (let i = 0; i < 3; i++) await limiter.acquire(33, "live");
    // The answer to the first: the server counts 3, so 2 are another client's; the 3 of ours
    // granted after it had not arrived yet.
    expect(await limiter.observe(33, { remaining: 7, resetMs: 9_000 })).toBe(2);
    expect((await limiter.inspect(33)).used).toBe(6);
    await limiter.settle(33, answered.slotId);
    // With every answer back, the same report teaches nothing new.
    expect(await limiter.observe(33, { remaining: 7, resetMs: 9_000 })).toBe(0);
  });

  it("marks the store as learned even when the server's budget is larger than ours", async () => {
    const { limiter } = setup({ limit: 10, windowMs: 10_000 });
    expect(await limiter.knows(32)).toBe(false);
    expect(await limiter.observe(32, { limit: 1_000, remaining: 990, resetMs: 1_000 })).toBe(0);
    expect(await limiter.knows(32)).toBe(true);
    expect((await limiter.inspect(32)).used).toBe(0);
  });
});

describe("settle", () => {
  it("holds a slot whose request left late until the server lets it go", async () => {
    const { limiter } = setup({ limit: 1, windowMs: 300 });
    const slot = await limiter.acquire(21, "live");
    if (!slot.granted) throw new Error("expected a grant");
    // The request took 200 ms to leave (a busy event loop): it arrived 200 ms after the grant.
    await new Promise((r) => setTimeout(r, 200));
    await limiter.settle(21, slot.slotId);
    // 300 ms + margin after the grant the server still counts it (it arrived 200 ms late).
    await new Promise((r) => setTimeout(r, 150));
    expect((await limiter.acquire(21, "live")).granted).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect((await limiter.acquire(21, "live")).granted).toBe(true);
  });

  it("never moves a slot earlier than its grant", async () => {
    // A margin longer than the time since the grant: now - margin is before the grant.
    const { limiter } = setup({ limit: 1, windowMs: 300, marginMs: 10_000 });
    const slot = await limiter.acquire(22, "live");
    if (!slot.granted) throw new Error("expected a grant");
    await limiter.settle(22, slot.slotId);
    // Still starting at its grant: the slot frees a life (window + margin) after it.
    expect((await limiter.inspect(22)).nextFreeAt).toBe(slot.grantedAtMs + 300 + 10_000);
  });
});

describe("feedAtBudget", () => {
  it("queues bulk work only as fast as the budget frees, each job holding its slot", async () => {
    const { limiter, queues: q } = setup({ limit: 5, windowMs: 400, bulkReserve: 0 });
    const started = Date.now();
    const fed = await feedAtBudget(
      { limiter, queues: q },
      11,
      Array.from({ length: 12 }, (_, i) => item(String(1000 + i))),
      { learnTimeoutMs: 0 },
    );
    const elapsed = Date.now() - started;
    expect(fed).toBe(12);
    // 12 jobs at 5 per 400 ms: the 11th and 12th had to wait for two windows to turn over.
    expect(elapsed).toBeGreaterThanOrEqual(800);
    const jobs = await q.sync.getJobs(["prioritized", "waiting"]);
    expect(jobs).toHaveLength(12);
    expect(jobs.every((j) => j.data.priority === "bulk" && j.data.prepaidSlot)).toBe(true);
    expect(await q.sync.getDelayedCount()).toBe(0);
    // Each queued job can spend its slot without waiting, and the window stays at the limit.
    const recent = jobs.sort((a, b) => b.timestamp - a.timestamp).slice(0, 5);
    for (const job of recent) {
      const d = await limiter.acquire(11, "bulk", job.id, job.data.prepaidSlot);
      expect(d.granted).toBe(true);
    }
    expect((await limiter.inspect(11)).used).toBeLessThanOrEqual(5);
  });

  it("spreads bulk jobs over the window when pacing is on, without delaying any", async () => {
    const { limiter, queues: q } = setup({
      limit: 10,
      windowMs: 1_000,
      bulkReserve: 0,
      paceBulk: true,
    });
    const fed = await feedAtBudget(
      { limiter, queues: q },
      16,
      Array.from({ length: 7 }, (_, i) => item(String(6000 + i))),
      { learnTimeoutMs: 0 },
    );
    expect(fed).toBe(7);
    const times = (await q.sync.getJobs(["prioritized", "waiting"]))
      .map((j) => j.timestamp)
      .sort((a, b) => a - b);
    // One slot per 100 ms after a burst of three: the seventh is queued ~400 ms after the first,
    // not at once, though the window had room for all seven.
    expect((times[6] as number) - (times[0] as number)).toBeGreaterThanOrEqual(350);
    expect(await q.sync.getDelayedCount()).toBe(0);
    expect((await limiter.inspect(16)).used).toBe(7);
  });

  it("leaves room for live work: live requests are granted while the feeder waits", async () => {
    const { limiter, queues: q } = setup({ limit: 4, windowMs: 500, bulkReserve: 0.25 });
    const feeding = feedAtBudget(
      { limiter, queues: q },
      12,
      Array.from({ length: 6 }, (_, i) => item(String(2000 + i))),
      { learnTimeoutMs: 0 },
    );
    await new Promise((r) => setTimeout(r, 100));
    // The feeder may take 3 of 4 slots (25 % reserve): the fourth is there for a live order.
    expect(await limiter.acquire(12, "live")).toMatchObject({ granted: true });
    expect(await feeding).toBe(6);
  });

  it("starts slowly: one job, then only what the store's first answer says is left", async () => {
    const { limiter, queues: q } = setup({ limit: 10, windowMs: 10_000, bulkReserve: 0 });
    const controller = new AbortController();
    const feeding = feedAtBudget(
      { limiter, queues: q },
      15,
      Array.from({ length: 8 }, (_, i) => item(String(5000 + i))),
      { signal: controller.signal },
    );
    await new Promise((r) => setTimeout(r, 150));
    expect(await q.sync.count()).toBe(1);
    // The first answer: another client already spent 6 of the 10 (we hold 1, 3 are left), and
    // while it spends, one slot stays unused for its requests we have not seen yet.
    await limiter.observe(15, { remaining: 3, resetMs: 5_000 });
    await new Promise((r) => setTimeout(r, 150));
    expect(await q.sync.count()).toBe(3);
    expect((await limiter.inspect(15)).used).toBe(9);
    controller.abort();
    await expect(feeding).rejects.toThrow(/abort/i);
  });

  it("gives the slot back when the order already has a queued job", async () => {
    const { limiter, queues: q } = setup({ limit: 10, windowMs: 10_000, bulkReserve: 0 });
    await q.enqueueSync({ ...item("3000"), priority: "live" });
    await feedAtBudget({ limiter, queues: q }, 13, [item("3000")]);
    expect((await limiter.inspect(13)).used).toBe(0);
  });

  it("stops when its signal is aborted, even while waiting for a slot", async () => {
    const { limiter, queues: q } = setup({ limit: 1, windowMs: 60_000, bulkReserve: 0 });
    const controller = new AbortController();
    const feeding = feedAtBudget({ limiter, queues: q }, 14, [item("4000"), item("4001")], {
      signal: controller.signal,
      learnTimeoutMs: 0,
    });
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    await expect(feeding).rejects.toThrow(/abort/i);
    expect(await q.sync.count()).toBe(1);
  });
});
