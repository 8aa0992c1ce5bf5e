import { randomUUID } from "node:crypto";
import { describe, expect, it, onTestFinished } from "vitest";
import { OrderQueues } from "../../src/queue/order-queues.ts";
import { redisConnections } from "../helpers/redis-connections.ts";

/**
 * A shop's arrival count (OrderQueues.countLive): a sliding window over the caller's clock,
 * one INCR per arrival, on one Redis and on the run's Redis Cluster alike.
 */

const connect = redisConnections("live-arrivals-test");

const shop = "arrivals-shop.myshopify.com";

describe.each(["one Redis", "cluster"] as const)("a shop's arrival count on %s", (kind) => {
  it("counts this window, the previous one weighted by what the last window covers", async () => {
    const queues = new OrderQueues(
      connect(kind),
      `t-${randomUUID()}`,
      {},
      { liveShare: { limit: 100, windowMs: 1_000 } },
    );
    onTestFinished(() => queues.close());
    const at = (now: number) => queues.countLive(shop, now);
    // Window 10 (10,000–10,999 ms): three arrivals.
    expect([await at(10_000), await at(10_400), await at(10_999)]).toEqual([1, 2, 3]);
    // Halfway through window 11 the last second still covers half of window 10: 1 + 3 × 0.5.
    expect(await at(11_500)).toBe(3);
    // At its end, almost none of it: 2 + 3 × 0.001, rounded up.
    expect(await at(11_999)).toBe(3);
    expect(await at(12_000)).toBe(3); // 1 + 2 × 1
    // Window 14: window 13 had none, and window 12 counts for nothing.
    expect(await at(14_000)).toBe(1);
    // Another shop has its own count.
    expect(await queues.countLive("other-shop.myshopify.com", 14_000)).toBe(1);
  });
});
