import type { Redis } from "ioredis";
import { normalizeWebhook, PayloadError, parseShopifyJson } from "../shopify/index.ts";
import type { ShopDomain } from "../sync/source-order.ts";
import type { DeadLetterData } from "./jobs.ts";
import { dedupeKey } from "./names.ts";
import type { PutOutcome, SnapshotStore } from "./snapshot-store.ts";
import { deadLetterId, type SyncQueues } from "./sync-queue.ts";

/** What became of one verified webhook. Every outcome but `unavailable` is answered 200. */
export type IngestOutcome =
  | "queued"
  | "stale"
  | "duplicate"
  | "dead-lettered"
  | "unknown-shop"
  | "ignored"
  | "uninstalled"
  | "privacy";

export interface VerifiedWebhook {
  shop: ShopDomain;
  topic: string;
  /** X-Shopify-Webhook-Id: one per delivery. */
  webhookId: string;
  /** X-Shopify-Event-Id: shared by every delivery one merchant action produced. */
  eventId: string | null;
  triggeredAt: string | null;
  rawBody: string;
}

export interface ShopLookup {
  /** "active" syncs; anything else is counted and answered 200 without syncing. */
  shopStatus(shop: string): "active" | "paused" | "uninstalled" | "unknown";
}

export interface LifecycleHandlers {
  appUninstalled(shop: ShopDomain): Promise<void>;
  privacy(
    shop: ShopDomain,
    event: { topic: string; customerId: string | null; email: string | null; orderIds: string[] },
  ): Promise<void>;
}

/** Shopify retries for 4 hours and can deliver up to a day late; 72 h covers both. */
export const DEDUPE_TTL_SECONDS = 72 * 3600;

export interface WebhookIngestDeps {
  redis: Redis;
  prefix: string;
  snapshots: SnapshotStore;
  queues: SyncQueues;
  shops: ShopLookup;
  lifecycle: LifecycleHandlers;
}

/**
 * The receiver's durable step (DESIGN.md principle 6): once a webhook's HMAC is valid, the event
 * is either queued or dead-lettered, never lost, and it is answered 200 only after that is
 * durable in Redis. Any Redis failure propagates, and the route answers 503 so Shopify retries.
 *
 * The dedupe mark is written last: a crash before it only means a redelivery is processed
 * again, which is harmless because the snapshot write is newer-only and the sync job is
 * deduplicated per order.
 */
export class WebhookIngest {
  readonly #deps: WebhookIngestDeps;

  constructor(deps: WebhookIngestDeps) {
    this.#deps = deps;
  }

  async ingest(webhook: VerifiedWebhook): Promise<IngestOutcome> {
    const { redis, prefix, snapshots, queues, shops } = this.#deps;
    // The event id is shared across topics, so it is only a safe key together with the topic.
    const seenKey = dedupeKey(
      prefix,
      webhook.shop,
      webhook.topic,
      webhook.eventId ?? webhook.webhookId,
    );
    if ((await redis.exists(seenKey)) === 1) return "duplicate";

    const outcome = await this.#handle(webhook, shops.shopStatus(webhook.shop), snapshots, queues);
    await redis.set(seenKey, "1", "EX", DEDUPE_TTL_SECONDS);
    return outcome;
  }

  /**
   * Runs a stored webhook body through the receiver again (an operator's retry of a payload in
   * the dead-letter queue), without the duplicate check its first delivery set.
   */
  async reingest(webhook: VerifiedWebhook): Promise<IngestOutcome> {
    const { snapshots, queues, shops } = this.#deps;
    return this.#handle(webhook, shops.shopStatus(webhook.shop), snapshots, queues);
  }

  async #handle(
    webhook: VerifiedWebhook,
    status: ReturnType<ShopLookup["shopStatus"]>,
    snapshots: SnapshotStore,
    queues: SyncQueues,
  ): Promise<IngestOutcome> {
    let event: ReturnType<typeof normalizeWebhook>;
    try {
      event = normalizeWebhook(webhook.topic, webhook.shop, parseShopifyJson(webhook.rawBody));
    } catch (error) {
      await this.#deadLetterPayload(webhook, error);
      return "dead-lettered";
    }

    switch (event.kind) {
      case "app-uninstalled":
        await this.#deps.lifecycle.appUninstalled(webhook.shop);
        return "uninstalled";
      case "privacy":
        await this.#deps.lifecycle.privacy(webhook.shop, event);
        return "privacy";
      case "ignored":
        return "ignored";
      default:
        break;
    }
    if (status !== "active") return "unknown-shop";

    const receivedAt = Date.now();
    let orderId: string;
    let put: PutOutcome;
    if (event.kind === "order") {
      orderId = event.order.id;
      put = await snapshots.storeOrder(event.order, { live: true });
    } else if (event.kind === "fulfillment") {
      orderId = event.orderId;
      put = await snapshots.storeFulfillment(webhook.shop, event.fulfillment, { live: true });
    } else {
      // Edits and refunds carry only a diff: mark the snapshot stale so the worker refetches the
      // whole order from the Admin API (or waits for the orders/updated that Shopify sends next).
      orderId = event.orderId;
      const at = event.updatedAt ? Date.parse(event.updatedAt) : receivedAt;
      await snapshots.putHint(webhook.shop, orderId, Number.isNaN(at) ? receivedAt : at, {
        live: true,
      });
      put = "stored";
    }
    // An older delivery than what we hold changes nothing: no job needed. The same version is
    // queued again: an earlier attempt may have stored it and failed (503) before its job was
    // queued, and this retry is then the only thing that will ever queue it.
    if (put === "older") return "stale";
    await queues.enqueueSync({
      shop: webhook.shop,
      orderId,
      priority: "live",
      trigger: webhook.topic,
      receivedAt,
    });
    return "queued";
  }

  async #deadLetterPayload(webhook: VerifiedWebhook, error: unknown): Promise<void> {
    const now = new Date().toISOString();
    const field = error instanceof PayloadError ? error.field : undefined;
    const message = error instanceof Error ? error.message : String(error);
    const data: DeadLetterData = {
      shop: webhook.shop,
      orderId: null,
      topic: webhook.topic,
      webhookId: webhook.webhookId,
      reason: `webhook body could not be used: ${message}`,
      category: "payload",
      errorClass: error instanceof Error ? error.constructor.name : "Error",
      ...(field ? { fields: [{ path: field, message }] } : {}),
      rawPayload: webhook.rawBody,
      attempts: 1,
      firstFailedAt: now,
      lastFailedAt: now,
    };
    await this.#deps.queues.addDeadLetter(
      deadLetterId(webhook.shop, null, webhook.webhookId.replaceAll(":", "_")),
      data,
    );
  }
}
