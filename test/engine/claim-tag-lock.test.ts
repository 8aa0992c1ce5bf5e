import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { orderLock } from "../../src/jobs/provider-event-worker.ts";
import { service } from "../helpers/services.ts";

const redis = new Redis(service("redisUrl"));
const other = new Redis(service("redisUrl"));
afterAll(() => {
  redis.disconnect();
  other.disconnect();
});

describe("the claim tags' order lock", () => {
  it("runs one order's tagging at a time, across callers, and never two orders' in series", async () => {
    const prefix = `t-${randomUUID()}`;
    // Two processes' locks on the same Redis.
    const [a, b] = [orderLock(redis, prefix), orderLock(other, prefix)];
    const steps: string[] = [];
    const until = (step: string) =>
      expect.poll(() => steps.includes(step), { timeout: 10_000, interval: 5 }).toBe(true);
    const work =
      (name: string, whileHolding: () => Promise<unknown> = async () => {}) =>
      async () => {
        steps.push(`${name} start`);
        await whileHolding();
        steps.push(`${name} end`);
        return name;
      };
    // The first holds order 1's lock until the other order's tagging has ended: were orders
    // serialised, the other order would wait for the first and this would time out.
    const first = a(
      "s.myshopify.com",
      "1",
      work("first", () => until("other order end")),
    );
    await until("first start");
    const results = await Promise.all([
      first,
      b("s.myshopify.com", "1", work("second")),
      b("s.myshopify.com", "2", work("other order")),
    ]);
    expect(results).toEqual(["first", "second", "other order"]);
    // The second waited for the first; the other order did not wait at all.
    expect(steps.indexOf("second start")).toBeGreaterThan(steps.indexOf("first end"));
    expect(steps.indexOf("other order end")).toBeLessThan(steps.indexOf("first end"));
    // Released after use, also when the work fails.
    await expect(
      a("s.myshopify.com", "1", async () => {
        throw new Error("Shopify down");
      }),
    ).rejects.toThrow("Shopify down");
    expect(await redis.exists(`${prefix}:claim-tags:{s.myshopify.com:1}`)).toBe(0);
  });
});
