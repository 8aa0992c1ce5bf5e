import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { orderMarkId, SnapshotStore } from "../../src/ingest/snapshot-store.ts";
import { WebhookIngest } from "../../src/ingest/webhook-ingest.ts";
import { snapshotKey } from "../../src/queue/names.ts";
import { OrderQueues } from "../../src/queue/order-queues.ts";
import type { ShopDomain } from "../../src/sync/source-order.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { service } from "../helpers/services.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const redis = new Redis(service("redisUrl"), { maxRetriesPerRequest: 1 });
afterAll(() => redis.disconnect());
const shop = "ingest-shop.myshopify.com" as ShopDomain;

/** A receiver on real Redis and BullMQ, with a fresh prefix. */
function receiver() {
  const prefix = `t-${randomUUID()}`;
  const queues = new OrderQueues(redis, prefix);
  // Built inside a test: closed when it ends, pass or fail.
  onTestFinished(() => queues.close());
  const snapshots = new SnapshotStore(redis, { prefix });
  const ingest = new WebhookIngest({
    redis,
    prefix,
    snapshots,
    queues,
    shops: { shopStatus: async () => "active" },
    lifecycle: {
      confirmUninstalled: async () => "uninstalled" as const,
      appUninstalled: async () => {},
      shopUpdated: async () => {},
      privacy: async () => {},
    },
  });
  return { ingest, queues, snapshots, prefix };
}

const delivery = (rawBody: string, eventId: string, topic = "orders/updated") => ({
  shop,
  topic,
  webhookId: `w-${randomUUID()}`,
  eventId,
  triggeredAt: null,
  rawBody,
});

describe("WebhookIngest on the order path (one script for dedupe and snapshot)", () => {
  it("queues a new event once and answers a redelivery of it as a duplicate, adding no job", async () => {
    const { ingest, queues, prefix } = receiver();
    const body = JSON.stringify(orderPayload(newModelOrder(1, 1001)));
    expect(await ingest.ingest(delivery(body, "e-1"))).toBe("queued");
    // The mark is kept in the order's snapshot (one key, one Redis Cluster slot), no key of its own.
    const snapshot = snapshotKey(prefix, shop, "9000000001");
    expect(await redis.hget(snapshot, "m")).toContain(`${orderMarkId("orders/updated", "e-1")}:`);
    expect(await redis.keys(`${prefix}:seen:*`)).toEqual([]);
    await queues.sync.obliterate({ force: true });
    // Even with the first job gone, the replay of the same event is recognised.
    expect(await ingest.ingest(delivery(body, "e-1"))).toBe("duplicate");
    expect(await queues.sync.count()).toBe(0);
  });

  it("answers an older delivery stale with no job, marks it, and its redelivery is a duplicate", async () => {
    const { ingest, queues, snapshots } = receiver();
    const model = newModelOrder(2, 2001);
    const older = JSON.stringify(orderPayload(model));
    model.updatedAt = "2026-11-01T16:00:00Z";
    model.note = "newer";
    const newer = JSON.stringify(orderPayload(model));
    expect(await ingest.ingest(delivery(newer, "e-new"))).toBe("queued");
    await queues.sync.obliterate({ force: true });
    expect(await ingest.ingest(delivery(older, "e-old"))).toBe("stale");
    expect(await ingest.ingest(delivery(older, "e-old"))).toBe("duplicate");
    expect(await queues.sync.count()).toBe(0);
    expect((await snapshots.get(shop, String(model.id)))?.order?.note).toBe("newer");
  });

  it("treats the same event id under another topic as a different event", async () => {
    const { ingest } = receiver();
    const body = JSON.stringify(orderPayload(newModelOrder(3, 3001)));
    expect(await ingest.ingest(delivery(body, "e-shared", "orders/create"))).toBe("queued");
    expect(await ingest.ingest(delivery(body, "e-shared", "orders/paid"))).toBe("queued");
  });

  it("dead-letters an unusable body once and answers its redelivery as a duplicate", async () => {
    const { ingest, queues } = receiver();
    const broken = JSON.stringify({ id: 77, line_items: [] });
    expect(await ingest.ingest(delivery(broken, "e-bad"))).toBe("dead-lettered");
    expect(await ingest.ingest(delivery(broken, "e-bad"))).toBe("duplicate");
    expect(await queues.deadLetter.count()).toBe(1);
  });

  it("runs an operator's re-ingest of a marked event again (no duplicate check)", async () => {
    const { ingest, queues } = receiver();
    const body = JSON.stringify(orderPayload(newModelOrder(4, 4001)));
    const first = delivery(body, "e-4");
    expect(await ingest.ingest(first)).toBe("queued");
    await queues.sync.obliterate({ force: true });
    expect(await ingest.reingest(first)).toBe("queued");
    expect(await queues.sync.count()).toBe(1);
  });
});
