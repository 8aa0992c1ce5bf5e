import type { RedisConnection } from "../lib/redis-keys.ts";
import { CONNECTOR, inSpan, MESSAGING, SpanKind, withTraceContext } from "../lib/tracing.ts";
import type { DeadLetterData, SyncJobData } from "../queue/jobs.ts";
import { dedupeKey } from "../queue/names.ts";
import { deadLetterId, type OrderQueues } from "../queue/order-queues.ts";
import {
  type NormalizedEvent,
  normalizeWebhook,
  PayloadError,
  parseShopifyJson,
  ShopMismatchError,
  TopicMismatchError,
} from "../shopify/index.ts";
import type { ShopDomain } from "../sync/source-order.ts";
import { OrderReceiver, receiverJobIdPrefix } from "./receive-order.ts";
import {
  type OrderMark,
  orderMarkId,
  putOutcome,
  type ReceiveOutcome,
  type SeenMark,
  type SnapshotStore,
  type SnapshotWrite,
} from "./snapshot-store.ts";

/** What became of one verified webhook. Every outcome but `unavailable` is answered 200. */
export type IngestOutcome =
  | "queued"
  | "stale"
  | "duplicate"
  | "dead-lettered"
  | "unknown-shop"
  | "ignored"
  | "uninstalled"
  | "shop-updated"
  | "privacy"
  /**
   * shop/redact for a shop that is installed (Shopify sends it only 48 h after an uninstall), or
   * app/uninstalled for a shop whose token Shopify still accepts (a replayed delivery).
   */
  | "refused-installed"
  /** shop/update or a privacy topic triggered longer ago than LIFECYCLE_WINDOW_MS: not acted on. */
  | "refused-stale";

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
  shopStatus(shop: string): Promise<"active" | "paused" | "uninstalled" | "unknown">;
}

export interface LifecycleHandlers {
  /**
   * Asks Shopify whether the shop's access token still works: `installed` when it does (an
   * app/uninstalled that Shopify did not send), `uninstalled` when Shopify refuses it (401) or
   * there is no token to ask with. Throws when Shopify cannot be asked (the route answers 503).
   */
  confirmUninstalled(shop: ShopDomain): Promise<"installed" | "uninstalled">;
  appUninstalled(shop: ShopDomain): Promise<void>;
  /** shop/update: the shop's currency and time zone, as they are now. */
  shopUpdated(
    shop: ShopDomain,
    update: { currency: string | null; timezone: string | null },
  ): Promise<void>;
  privacy(
    shop: ShopDomain,
    event: { topic: string; customerId: string | null; email: string | null; orderIds: string[] },
  ): Promise<void>;
}

/**
 * What the receiver answers for a snapshot write's outcome: a duplicate; an older delivery than
 * what is kept changes nothing and needs no job (the script marked it); a stored part, or the
 * same version again, was queued. The same version is queued again because an earlier attempt may
 * have stored it and failed (503) before its job was queued: this retry is then the only thing
 * that will ever queue it.
 */
function settled(put: ReceiveOutcome): IngestOutcome {
  return put === "duplicate" ? "duplicate" : put === "older" ? "stale" : "queued";
}

/** Shopify retries for 4 hours and can deliver up to a day late; 72 h covers both. */
export const DEDUPE_TTL_SECONDS = 72 * 3600;

/**
 * How old (by X-Shopify-Triggered-At, and a shop/update body's `updated_at`) a shop/update or
 * privacy delivery may be and still be acted on: 25 hours. Shopify retries for 4 hours and has
 * delivered up to a day late, and a genuine privacy request must not be lost; shorter than the
 * 72-hour dedupe marks, so a delivery replayed with its own headers is caught either way: a
 * duplicate for 72 hours, stale after 25. The header is not signed, so this is not the main
 * defence: bodies must fit their topic, app/uninstalled is confirmed with Shopify, and
 * shop/redact needs an uninstalled shop.
 */
export const LIFECYCLE_WINDOW_MS = 25 * 3_600_000;
/** A trigger time this far ahead of our clock is as untrustworthy as an old one. */
export const LIFECYCLE_CLOCK_SKEW_MS = 5 * 60_000;

export interface WebhookIngestDeps {
  redis: RedisConnection;
  prefix: string;
  snapshots: SnapshotStore;
  queues: OrderQueues;
  shops: ShopLookup;
  lifecycle: LifecycleHandlers;
  /** Tests pass a fixed clock. */
  now?: () => number;
}

/**
 * The receiver's durable step (docs/principles.md, principle 6): once a webhook's HMAC is valid, the event
 * is either queued or dead-lettered, never lost, and it is answered 200 only after that is
 * durable in Redis. Any Redis failure propagates, and the route answers 503 so Shopify retries.
 *
 * An order, fulfillment or hint event for an active shop (nearly every webhook) costs one Redis
 * call on a single Redis: one script (receive-order.ts) sets the event's dedupe mark unless it is
 * there (a duplicate), writes the newer-only snapshot, and unless a newer version is kept (an
 * older delivery needs no job), counts the shop's live arrival and adds the order's sync job as
 * BullMQ's add does. The script runs whole or not at all, so the mark never stands without the
 * job. On a Redis Cluster, where the queue's keys are in another slot than the order's, it takes
 * four calls: the dedupe check and snapshot script, then (unless a duplicate or older) the
 * arrival count, BullMQ's add and the mark, so that both paths count the same arrivals
 * (OrderQueues.countLive). Other events check the mark, are handled, and are marked.
 *
 * Where the mark is a call of its own it is written last: a crash before it only means a
 * redelivery is processed again, which is harmless because the snapshot write is newer-only and
 * the sync job is deduplicated per order.
 */
export class WebhookIngest {
  readonly #deps: WebhookIngestDeps;
  readonly #receiver: OrderReceiver;

  constructor(deps: WebhookIngestDeps) {
    this.#deps = deps;
    this.#receiver = new OrderReceiver(deps.redis);
  }

  async ingest(webhook: VerifiedWebhook): Promise<IngestOutcome> {
    return this.#process(webhook, true);
  }

  /**
   * Runs a stored webhook body through the receiver again (an operator's retry of a payload in
   * the dead-letter queue), without the duplicate check its first delivery set.
   */
  async reingest(webhook: VerifiedWebhook): Promise<IngestOutcome> {
    return this.#process(webhook, false);
  }

  async #process(webhook: VerifiedWebhook, dedupe: boolean): Promise<IngestOutcome> {
    let event: NormalizedEvent;
    try {
      event = normalizeWebhook(webhook.topic, webhook.shop, parseShopifyJson(webhook.rawBody));
    } catch (error) {
      // Not the header shop's data, or not the header topic's body (a replay under another
      // topic): nothing is stored or dead-lettered; the receiver answers 400.
      if (error instanceof ShopMismatchError || error instanceof TopicMismatchError) throw error;
      return this.#checked(webhook, dedupe, async () => {
        await this.#deadLetterPayload(webhook, error);
        return "dead-lettered";
      });
    }
    switch (event.kind) {
      case "app-uninstalled":
        // The body is a shop resource, like shop/update's, and its HMAC does not cover the
        // topic: Shopify itself says whether the app is still installed, whatever the age.
        return this.#checked(webhook, dedupe, async () => {
          const confirmed = await this.#deps.lifecycle.confirmUninstalled(webhook.shop);
          if (confirmed === "installed") return "refused-installed";
          await this.#deps.lifecycle.appUninstalled(webhook.shop);
          return "uninstalled";
        });
      case "shop-update": {
        const update = event;
        if (this.#stale(webhook.triggeredAt, true) || this.#stale(update.updatedAt, false)) {
          return this.#checked(webhook, dedupe, async () => "refused-stale");
        }
        return this.#checked(webhook, dedupe, async () => {
          await this.#deps.lifecycle.shopUpdated(webhook.shop, update);
          return "shop-updated";
        });
      }
      case "privacy": {
        const privacy = event;
        if (this.#stale(webhook.triggeredAt, true)) {
          return this.#checked(webhook, dedupe, async () => "refused-stale");
        }
        const status = await this.#deps.shops.shopStatus(webhook.shop);
        if (privacy.topic === "shop/redact" && (status === "active" || status === "paused")) {
          return this.#checked(webhook, dedupe, async () => "refused-installed");
        }
        return this.#checked(webhook, dedupe, async () => {
          await this.#deps.lifecycle.privacy(webhook.shop, privacy);
          return "privacy";
        });
      }
      case "ignored":
        return this.#checked(webhook, dedupe, async () => "ignored");
      default:
        break;
    }
    if ((await this.#deps.shops.shopStatus(webhook.shop)) !== "active") {
      return this.#checked(webhook, dedupe, async () => "unknown-shop");
    }
    // The queue hop's producer span (messaging conventions): the job carries its context.
    return inSpan(
      "send sync",
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          [MESSAGING.system]: "bullmq",
          [MESSAGING.operationType]: "send",
          [MESSAGING.destination]: "sync",
          [CONNECTOR.shop]: webhook.shop,
          [CONNECTOR.topic]: event.topic,
        },
      },
      () => this.#store(webhook, event, dedupe),
    );
  }

  /**
   * Whether a lifecycle time (X-Shopify-Triggered-At, or a body's `updated_at`) is outside
   * LIFECYCLE_WINDOW_MS. A missing trigger time counts as stale (Shopify always sends it); a
   * missing `updated_at` is only the header's to judge.
   */
  #stale(at: string | null, ifMissing: boolean): boolean {
    if (at === null) return ifMissing;
    const ms = Date.parse(at);
    if (Number.isNaN(ms)) return true;
    const now = this.#deps.now?.() ?? Date.now();
    return ms < now - LIFECYCLE_WINDOW_MS || ms > now + LIFECYCLE_CLOCK_SKEW_MS;
  }

  /**
   * The dedupe mark of an event about no order, or null without the duplicate check (a
   * re-ingest). The event id is shared across topics, so it is only a safe key together with the
   * topic.
   */
  #seenMark(webhook: VerifiedWebhook, dedupe: boolean): SeenMark | null {
    if (!dedupe) return null;
    const eventId = webhook.eventId ?? webhook.webhookId;
    return {
      key: dedupeKey(this.#deps.prefix, webhook.shop, webhook.topic, eventId),
      ttlSeconds: DEDUPE_TTL_SECONDS,
    };
  }

  /**
   * The dedupe mark of an event about an order, kept in the order's snapshot hash (read and
   * written with it: lua/snapshot-write.lua), or null without the duplicate check.
   */
  #orderMark(webhook: VerifiedWebhook, dedupe: boolean): OrderMark | null {
    if (!dedupe) return null;
    const eventId = webhook.eventId ?? webhook.webhookId;
    return { id: orderMarkId(webhook.topic, eventId), ttlSeconds: DEDUPE_TTL_SECONDS };
  }

  /** The rarer events: the dedupe check, the work, then the mark. */
  async #checked(
    webhook: VerifiedWebhook,
    dedupe: boolean,
    handle: () => Promise<IngestOutcome>,
  ): Promise<IngestOutcome> {
    const seen = this.#seenMark(webhook, dedupe);
    if (seen && (await this.#deps.redis.exists(seen.key)) === 1) return "duplicate";
    const outcome = await handle();
    await this.#mark(seen);
    return outcome;
  }

  async #mark(seen: SeenMark | null): Promise<void> {
    if (seen) await this.#deps.redis.set(seen.key, "1", "EX", seen.ttlSeconds);
  }

  async #store(
    webhook: VerifiedWebhook,
    event: Extract<NormalizedEvent, { kind: "order" | "fulfillment" | "order-hint" }>,
    dedupe: boolean,
  ): Promise<IngestOutcome> {
    const { snapshots, queues } = this.#deps;
    const receivedAt = Date.now();
    const orderId = event.kind === "order" ? event.order.id : event.orderId;
    const mark = this.#orderMark(webhook, dedupe);
    let write: SnapshotWrite;
    if (event.kind === "order") {
      write = snapshots.orderWrite(event.order);
    } else if (event.kind === "fulfillment") {
      write = snapshots.fulfillmentWrite(webhook.shop, event.fulfillment);
    } else {
      // Edits and refunds carry only a diff: mark the snapshot stale so the worker refetches the
      // whole order from the Admin API (or waits for the orders/updated that Shopify sends next).
      const at = event.updatedAt ? Date.parse(event.updatedAt) : receivedAt;
      write = snapshots.hintWrite(webhook.shop, orderId, Number.isNaN(at) ? receivedAt : at);
    }
    const data = withTraceContext<SyncJobData>({
      shop: webhook.shop,
      orderId,
      priority: "live",
      trigger: event.topic,
      receivedAt,
    });
    const plan = await queues.liveJobPlan(webhook.shop, orderId);
    if (plan) {
      // One call: the mark, the snapshot, the arrival count and the job. Only a delivery that
      // queues a job is counted (OrderQueues.countLive).
      const { code } = await this.#receiver.receive(write, {
        ttlMs: snapshots.ttlMs,
        liveAt: receivedAt,
        seen: mark,
        plan,
        data,
      });
      return settled(putOutcome(code));
    }
    // A Redis Cluster: the queue's keys are in another slot than the order's. The dedupe check
    // and the snapshot in one script, which takes the job's stamp; then the arrival count, only
    // for a delivery that queues a job as the one script counts (OrderQueues.countLive); then
    // the job, with the id the one script gives it; then the mark, into the snapshot.
    const { outcome, stamp } = await snapshots.writeForJob(write, {
      live: true,
      ...(mark ? { seen: mark } : {}),
    });
    if (outcome === "duplicate" || outcome === "older" || stamp === null) return settled(outcome);
    const liveCount = queues.countLive(webhook.shop, receivedAt);
    liveCount.catch(() => {}); // enqueueSync awaits it, after its choice of the order's queue
    await queues.enqueueSync(data, {
      liveCount,
      jobId: `${receiverJobIdPrefix(webhook.shop, orderId)}${stamp}`,
    });
    if (mark) await snapshots.mark(write.key, mark);
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
