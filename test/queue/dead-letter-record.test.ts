import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  DeadLetterLock,
  HISTORY_LIMIT,
  mergeFailure,
  RETIRED_TTL_MS,
  retiredKey,
} from "../../src/queue/dead-letter-record.ts";
import type { DeadLetterData } from "../../src/queue/jobs.ts";
import { OrderQueues } from "../../src/queue/order-queues.ts";
import { monitorRedis } from "../helpers/redis-monitor.ts";
import { service } from "../helpers/services.ts";

const redis = new Redis(service("redisUrl"), { maxRetriesPerRequest: null });
afterAll(() => redis.disconnect());
let queues: OrderQueues | undefined;
afterEach(async () => {
  await queues?.deadLetter.obliterate({ force: true });
  await queues?.close();
});

const failure = (at: string, status: number, attempts = 1): DeadLetterData => ({
  shop: "a.myshopify.com",
  orderId: "1",
  topic: "orders/updated",
  reason: `refused with ${status}`,
  category: "provider-validation",
  errorClass: "ProviderValidationError",
  response: { status },
  attempts,
  firstFailedAt: at,
  lastFailedAt: at,
});

describe("dead-letter records", () => {
  it("adds up attempts, keeps the first failure time and the newest 20 earlier failures", () => {
    let entry: DeadLetterData | null = null;
    for (let i = 0; i < 25; i++) {
      entry = mergeFailure(
        entry,
        failure(`2026-11-01T00:00:${String(i).padStart(2, "0")}Z`, 400 + i, 2),
      );
    }
    expect(entry?.attempts).toBe(50);
    expect(entry?.firstFailedAt).toBe("2026-11-01T00:00:00Z");
    expect(entry?.lastFailedAt).toBe("2026-11-01T00:00:24Z");
    expect(entry?.history).toHaveLength(HISTORY_LIMIT);
    expect(entry?.history?.at(-1)).toMatchObject({ at: "2026-11-01T00:00:23Z", status: 423 });
    expect(entry?.history?.[0]).toMatchObject({ at: "2026-11-01T00:00:04Z" });
  });

  it("records a failure that arrives while a retry holds the entry after the retry, with its history", async () => {
    const prefix = `t-${randomUUID()}`;
    queues = new OrderQueues(redis, prefix);
    const id = "a.myshopify.com|1";
    await queues.addDeadLetter(id, failure("2026-11-01T00:00:00Z", 400));

    // An operator's retry takes the entry's lock…
    const lock = new DeadLetterLock(redis, prefix);
    const token = await lock.acquire(id);
    expect(token).not.toBeNull();
    // …and the retried order fails again before the retry removed the old entry. Redis's own
    // log of commands shows the recorder asking for the lock, refused, and asking again.
    let lockRequests = 0;
    const monitor = await monitorRedis(service("redisUrl"), ({ args }) => {
      if (args[0]?.toLowerCase() === "set" && args[1]?.startsWith(prefix) && args.includes("NX")) {
        lockRequests++;
      }
    });
    let recorded = false;
    const again = queues.addDeadLetter(id, failure("2026-11-01T00:05:00Z", 422)).then(() => {
      recorded = true;
    });
    try {
      await expect.poll(() => lockRequests).toBeGreaterThanOrEqual(2);
    } finally {
      monitor.stop();
    }
    // Refused twice while the retry holds the lock: it waits, nothing is recorded yet.
    expect(recorded).toBe(false);

    // The retry finishes as DeadLetters.retry does: history parked, entry removed, lock freed.
    const old = await queues.deadLetter.getJob(id);
    await redis.set(
      retiredKey(prefix, id),
      JSON.stringify({ ...old?.data, retries: 1 }),
      "PX",
      RETIRED_TTL_MS,
    );
    await old?.remove();
    await lock.release(id, token as string);
    await again;

    const entry = (await queues.deadLetter.getJob(id))?.data;
    expect(entry).toMatchObject({
      response: { status: 422 },
      attempts: 2,
      retries: 1,
      firstFailedAt: "2026-11-01T00:00:00Z",
      lastFailedAt: "2026-11-01T00:05:00Z",
      history: [{ at: "2026-11-01T00:00:00Z", status: 400 }],
    });
    expect(await redis.exists(retiredKey(prefix, id))).toBe(0);
  });

  it("gives the lock to one holder at a time and only its holder can release it", async () => {
    const lock = new DeadLetterLock(redis, `t-${randomUUID()}`);
    const first = await lock.acquire("x");
    expect(await lock.acquire("x")).toBeNull();
    await lock.release("x", "not-the-token");
    expect(await lock.acquire("x")).toBeNull();
    await lock.release("x", first as string);
    expect(await lock.acquire("x")).not.toBeNull();
  });
});
