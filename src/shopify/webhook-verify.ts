import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Shopify webhook verification on the receiver's hot path (ADR 0004). It does what
 * `shopify.webhooks.validate` does — HMAC-SHA256 of the raw body bytes with the app secret,
 * compared in constant time, then the required headers — with one header read per name and
 * `node:crypto` instead of WebCrypto. The library spent most of the receiver's CPU
 * canonicalizing every header several times per call; a conformance test keeps both in step.
 *
 * Header names are case-insensitive, and Shopify's newer event deliveries drop the `X-` prefix
 * (`shopify-webhook-id`): both spellings are accepted (Shopify's documentation).
 *
 * A header sent twice (a proxy adding one the sender already sent) reaches the receiver as its
 * copies joined by ", ": copies that agree are that one value, so the delivery is read as sent
 * (`orders/updated, orders/updated` was an unknown topic, answered 200 `ignored`: a signed event
 * lost); copies that differ are refused, naming the header, since which one Shopify meant cannot
 * be told. No value of these headers holds a comma.
 */

export type WebhookCheck =
  | {
      valid: true;
      topic: string;
      domain: string;
      webhookId: string;
      eventId: string | null;
      triggeredAt: string | null;
      apiVersion: string;
    }
  | { valid: false; reason: "missing_hmac" | "invalid_hmac" | "missing_body" }
  | { valid: false; reason: "missing_headers"; missingHeaders: string[] }
  | { valid: false; reason: "conflicting_headers"; conflictingHeaders: string[] };

/**
 * Two header families, as the library reads them: classic webhooks (`X-Shopify-…`) and the
 * newer event deliveries (`shopify-…`, no event id). The HMAC header present picks the family.
 */
const FAMILIES = {
  webhooks: {
    hmac: "X-Shopify-Hmac-Sha256",
    topic: "X-Shopify-Topic",
    domain: "X-Shopify-Shop-Domain",
    apiVersion: "X-Shopify-API-Version",
    webhookId: "X-Shopify-Webhook-Id",
    eventId: "X-Shopify-Event-Id",
    triggeredAt: "X-Shopify-Triggered-At",
  },
  events: {
    hmac: "shopify-hmac-sha256",
    topic: "shopify-topic",
    domain: "shopify-shop-domain",
    apiVersion: "shopify-api-version",
    webhookId: "shopify-webhook-id",
    eventId: null,
    triggeredAt: "shopify-triggered-at",
  },
} as const;

const REQUIRED = ["topic", "domain", "apiVersion", "webhookId"] as const;

/** A SHA-256 digest is 32 bytes. */
const DIGEST_BYTES = 32;

/** Copies of one header that differ: see the module's comment. */
const CONFLICT = Symbol("conflicting copies");

/** A header's value, sent once or in copies that agree; null when absent. */
function single(headers: Headers, name: string): string | null | typeof CONFLICT {
  const value = headers.get(name);
  if (value === null || !value.includes(",")) return value;
  const [first, ...rest] = value.split(",").map((copy) => copy.trim());
  return rest.every((copy) => copy === first) ? (first ?? null) : CONFLICT;
}

export function verifyShopifyWebhook(
  headers: Headers,
  rawBody: Uint8Array,
  secret: string,
): WebhookCheck {
  if (rawBody.byteLength === 0) return { valid: false, reason: "missing_body" };
  const eventsHmac = single(headers, FAMILIES.events.hmac);
  const names = eventsHmac ? FAMILIES.events : FAMILIES.webhooks;
  const hmac = eventsHmac ?? single(headers, names.hmac);
  if (hmac === CONFLICT) return conflicting([names.hmac]);
  if (!hmac) return { valid: false, reason: "missing_hmac" };

  const given = Buffer.from(hmac, "base64");
  const expected = createHmac("sha256", secret).update(rawBody).digest();
  // Length first (timingSafeEqual throws on a mismatch); the length of a digest is no secret.
  if (given.byteLength !== DIGEST_BYTES || !timingSafeEqual(given, expected)) {
    return { valid: false, reason: "invalid_hmac" };
  }

  // Headers.get is case-insensitive, so each name is read once, as sent.
  const read = {
    topic: single(headers, names.topic),
    domain: single(headers, names.domain),
    apiVersion: single(headers, names.apiVersion),
    webhookId: single(headers, names.webhookId),
    eventId: names.eventId ? single(headers, names.eventId) : null,
    triggeredAt: single(headers, names.triggeredAt),
  };
  const differ = (Object.keys(read) as (keyof typeof read)[]).filter((k) => read[k] === CONFLICT);
  if (differ.length > 0) {
    return conflicting(differ.map((key) => names[key] ?? key));
  }
  const value = read as { [K in keyof typeof read]: string | null };
  const { topic, domain, apiVersion, webhookId } = value;
  if (!topic || !domain || !apiVersion || !webhookId) {
    const missingHeaders = REQUIRED.filter((key) => !value[key]).map((key) => names[key]);
    return { valid: false, reason: "missing_headers", missingHeaders };
  }
  return {
    valid: true,
    topic,
    domain,
    webhookId,
    apiVersion,
    eventId: value.eventId,
    triggeredAt: value.triggeredAt,
  };
}

function conflicting(conflictingHeaders: string[]): WebhookCheck {
  return { valid: false, reason: "conflicting_headers", conflictingHeaders };
}
