import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { SnapshotStore } from "../../src/ingest/snapshot-store.ts";
import { WebhookIngest } from "../../src/ingest/webhook-ingest.ts";
import { OrderQueues } from "../../src/queue/order-queues.ts";
import type { ShopDomain } from "../../src/sync/source-order.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { service } from "../helpers/services.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const redis = new Redis(service("redisUrl"), { maxRetriesPerRequest: 1 });
afterAll(() => redis.disconnect());
const shop = "retry-shop.myshopify.com" as ShopDomain;

/**
 * Real Redis and BullMQ; `enqueueSync` fails once, as when Redis dies between the two writes.
 * The receiver takes its separate-calls path, the one it runs on a Redis Cluster (`liveJobPlan`
 * null): on a single Redis the snapshot, the job and the mark are one script, with nothing in
 * between to fail.
 */
function ingestWithFailingEnqueue() {
  const prefix = `t-${randomUUID()}`;
  const queues = new OrderQueues(redis, prefix);
  // Built inside a test: closed when it ends, pass or fail.
  onTestFinished(() => queues.close());
  let failures = 1;
  const flaky = new Proxy(queues, {
    get(target, property, receiver) {
      if (property === "liveJobPlan") return async () => null;
      if (property === "enqueueSync") {
        return async (...args: Parameters<OrderQueues["enqueueSync"]>) => {
          if (failures-- > 0) throw new Error("Connection is closed.");
          return target.enqueueSync(...args);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const ingest = new WebhookIngest({
    redis,
    prefix,
    snapshots: new SnapshotStore(redis, { prefix }),
    queues: flaky,
    shops: { shopStatus: async () => "active" },
    lifecycle: {
      confirmUninstalled: async () => "uninstalled" as const,
      appUninstalled: async () => {},
      shopUpdated: async () => {},
      privacy: async () => {},
    },
  });
  return { ingest, queues };
}

describe("a webhook whose first attempt stored the snapshot but not the job", () => {
  it("queues the job when Shopify retries the same delivery (found by the Redis-restart chaos run)", async () => {
    const { ingest, queues } = ingestWithFailingEnqueue();
    const rawBody = JSON.stringify(orderPayload(newModelOrder(1, 1001)));
    const webhook = {
      shop,
      topic: "orders/updated",
      webhookId: "w-1",
      eventId: "e-1",
      triggeredAt: null,
      rawBody,
    };
    // First attempt: the snapshot is written, the enqueue fails: the receiver answers 503.
    await expect(ingest.ingest(webhook)).rejects.toThrow("Connection is closed.");
    expect(await queues.sync.count()).toBe(0);
    // Shopify's retry of the same delivery holds the version already stored.
    expect(await ingest.ingest(webhook)).toBe("queued");
    expect(await queues.sync.count()).toBe(1);
    await queues.sync.obliterate({ force: true });
  });

  it("still answers an older version than the one held as stale, with no job", async () => {
    const { ingest, queues } = ingestWithFailingEnqueue();
    const model = newModelOrder(2, 2001);
    const older = JSON.stringify(orderPayload(model));
    model.updatedAt = "2026-11-01T16:00:00Z";
    const newer = JSON.stringify(orderPayload(model));
    const base = { shop, topic: "orders/updated", eventId: null, triggeredAt: null };
    await expect(ingest.ingest({ ...base, webhookId: "n-1", rawBody: newer })).rejects.toThrow();
    expect(await ingest.ingest({ ...base, webhookId: "o-1", rawBody: older })).toBe("stale");
    expect(await queues.sync.count()).toBe(0);
  });
});
