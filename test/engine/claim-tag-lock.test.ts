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
    const work = (name: string, ms: number) => async () => {
      steps.push(`${name} start`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      steps.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([
      a("s.myshopify.com", "1", work("first", 200)),
      b("s.myshopify.com", "1", work("second", 10)),
      b("s.myshopify.com", "2", work("other order", 10)),
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
