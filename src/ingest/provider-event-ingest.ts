import type { Logger } from "pino";
import { errorText } from "../lib/redact.ts";
import { type SecretBox, sealedFor } from "../lib/secret-box.ts";
import {
  bodyDigest,
  bodyStore,
  classifyTopic,
  eventIdentity,
  namesResource,
  unwrapEvent,
} from "../provider/events.ts";
import {
  isFresh,
  PROVIDER_HEADERS,
  readDeliveryHeaders,
  STALE_AFTER_MS,
  signatureMatches,
} from "../provider/webhook-verify.ts";
import type { ProviderEventQueue } from "../queue/provider-event-queue.ts";
import type {
  ProviderAccount,
  ProviderEventRepository,
  ProviderWebhookSecretRepository,
} from "../store/index.ts";

export interface ProviderEventIngestDeps {
  events: ProviderEventRepository;
  webhookSecrets: ProviderWebhookSecretRepository;
  secrets: SecretBox;
  queue: Pick<ProviderEventQueue, "enqueue" | "requeue">;
  /** The production environment's API base URL: a shop without its own uses it. */
  defaultBaseUrl: string;
  logger: Logger;
}

export type ProviderIngestResult =
  | {
      ok: true;
      /**
       * queued: new; duplicate: seen (by delivery ID, by what the event is, or by its body) and
       * processed; requeued: seen, not processed yet.
       */
      outcome: "queued" | "duplicate" | "requeued";
      eventId: string;
      topic: string | null;
      storeId: number;
    }
  | {
      ok: false;
      status: 400 | 401;
      code: string;
      message: string;
      fields?: { path: string; message: string }[];
      storeId?: number;
    };

const decoder = new TextDecoder();
const MAX_EVENT_ID = 200;

/**
 * The provider's webhooks, up to the queue: the signature of the raw bytes with the secret of
 * the account of a shop bound to the delivery's store (any of them, if several), the
 * timestamp's freshness, then the event is stored once per event ID and queued for the worker.
 * Nothing is parsed before the signature holds, and nothing is processed here: the provider
 * gets its answer as soon as the event is durable. Database or Redis failures throw (the route
 * answers 503 so the provider retries; a stored event is queued again by that retry).
 */
export class ProviderEventIngest {
  constructor(private readonly deps: ProviderEventIngestDeps) {}

  /** The secrets of the accounts of the shops bound to the store, with those shops. */
  async #candidates(storeId: number) {
    const { events, webhookSecrets, secrets, defaultBaseUrl, logger } = this.deps;
    const accounts = new Map<string, { account: ProviderAccount; shops: string[] }>();
    for (const shop of await events.shopsOnStore(storeId)) {
      if (!shop.providerClientId) continue;
      const account = {
        providerBaseUrl: shop.providerBaseUrl ?? defaultBaseUrl,
        clientId: shop.providerClientId,
      };
      const key = `${account.providerBaseUrl}|${account.clientId}`;
      const entry = accounts.get(key) ?? { account, shops: [] };
      entry.shops.push(shop.shop);
      accounts.set(key, entry);
    }
    const out: { account: ProviderAccount; shops: string[]; secret: string }[] = [];
    for (const { account, shops } of accounts.values()) {
      const sealed = await webhookSecrets.get(account);
      if (!sealed) continue;
      try {
        const context = sealedFor.providerWebhookSecret(account.providerBaseUrl, account.clientId);
        out.push({ account, shops, secret: secrets.open(sealed, context) });
      } catch (error) {
        logger.warn(
          { storeId, clientId: account.clientId, err: { message: errorText(error) } },
          "a provider webhook secret cannot be opened; its account's deliveries are refused",
        );
      }
    }
    return out;
  }

  async receive(headers: Headers, rawBody: Uint8Array): Promise<ProviderIngestResult> {
    const check = readDeliveryHeaders(headers);
    if (!check.ok) return check;
    const { delivery } = check;
    const { storeId } = delivery;
    const candidates = await this.#candidates(storeId);
    if (candidates.length === 0) {
      return {
        ok: false,
        status: 401,
        code: "unknown_store",
        message: `no shop bound to provider store ${storeId} has a webhook secret: enter it on the shop's settings page`,
        fields: [
          { path: `headers.${PROVIDER_HEADERS.storeId.toLowerCase()}`, message: "unknown store" },
        ],
        storeId,
      };
    }
    const verified = candidates.filter((c) =>
      signatureMatches(delivery.signatures, c.secret, rawBody, delivery.timestamp),
    );
    const first = verified[0];
    if (!first) {
      return {
        ok: false,
        status: 401,
        code: "invalid_signature",
        message: `the signature is not the store's: ${PROVIDER_HEADERS.signature} must be sha256=<hex HMAC-SHA256 of the raw body> with the account's webhook secret`,
        fields: [
          {
            path: `headers.${PROVIDER_HEADERS.signature.toLowerCase()}`,
            message: "does not match",
          },
        ],
        storeId,
      };
    }
    if (!isFresh(delivery.sentAt)) {
      return {
        ok: false,
        status: 401,
        code: "stale_timestamp",
        message: `the delivery's timestamp (${delivery.sentAt.toISOString()}) is more than ${STALE_AFTER_MS / 60_000} minutes from now: a replay, or a clock that is off`,
        fields: [
          {
            path: `headers.${PROVIDER_HEADERS.timestamp.toLowerCase()}`,
            message: "too far from now",
          },
        ],
        storeId,
      };
    }

    const text = decoder.decode(rawBody);
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      // Signed but not JSON: kept as an unknown event, never refused.
    }
    const envelope = unwrapEvent(body);
    const eventId = delivery.webhookId ?? envelope.eventId;
    if (eventId === null || eventId.length > MAX_EVENT_ID) {
      return {
        ok: false,
        status: 400,
        code: eventId === null ? "missing_headers" : "invalid_headers",
        message:
          eventId === null
            ? `the delivery names no event ID: ${PROVIDER_HEADERS.webhookId} is required to tell a replay from a new event`
            : `${PROVIDER_HEADERS.webhookId} is longer than ${MAX_EVENT_ID} characters`,
        fields: [
          {
            path: `headers.${PROVIDER_HEADERS.webhookId.toLowerCase()}`,
            message: eventId === null ? "required" : "too long",
          },
        ],
        storeId,
      };
    }
    const topic = delivery.topic ?? envelope.topic;
    // The signature covers the body only: the store header could have been changed. The body's
    // store decides; an event that would change a shop's claims or registrations must name it.
    const classified = classifyTopic(topic);
    const named = bodyStore(body, envelope.resource);
    const needsStore = namesResource(classified.kind, envelope.resource, classified.action);
    if (named.storeId !== String(storeId) && (named.storeId !== null || needsStore)) {
      const header = PROVIDER_HEADERS.storeId;
      return {
        ok: false,
        status: 400,
        code: "store_mismatch",
        message:
          named.storeId === null
            ? `the body names no store: a ${classified.kind.replace("_", " ")} event must carry its storeId, the store of ${header}`
            : `the body is about store ${named.storeId}, not ${header}'s store ${storeId}: refused (a delivery is routed by its body's store)`,
        fields: [
          {
            path: named.field,
            message: named.storeId === null ? "required" : `must be ${header} (${storeId})`,
          },
        ],
        storeId,
      };
    }
    // The environment of the first account that verified; the shops of every account of it.
    const shops = verified
      .filter((v) => v.account.providerBaseUrl === first.account.providerBaseUrl)
      .flatMap((v) => v.shops);
    const stored = await this.deps.events.record({
      providerBaseUrl: first.account.providerBaseUrl,
      storeId,
      eventId,
      shops: [...new Set(shops)].sort(),
      topic,
      kind: classified.kind,
      apiVersion: delivery.apiVersion,
      sentAt: delivery.sentAt.toISOString(),
      payload: text,
      identity: eventIdentity(topic, body, rawBody),
      bodySha256: bodyDigest(rawBody),
    });
    if (!stored.duplicate) {
      await this.deps.queue.enqueue(stored.id);
      return { ok: true, outcome: "queued", eventId, topic, storeId };
    }
    if (stored.processed) return { ok: true, outcome: "duplicate", eventId, topic, storeId };
    await this.deps.queue.requeue(stored.id);
    return { ok: true, outcome: "requeued", eventId, topic, storeId };
  }
}
