import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The provider's outbound webhooks (docs/provider-contract.md, "Events"): what the headers of a
 * delivery say, and whether its signature is one of the account's. The provider's public
 * documentation names the headers' content, not their spelling: we read `X-Webhook-Id`,
 * `X-Webhook-Topic`, `X-Api-Version`, `X-Store-Id`, `X-Webhook-Timestamp` and
 * `X-Webhook-Signature`, and also the same names with an `X-Provider-` prefix or no prefix.
 */

/** A delivery older (or newer) than this is refused as stale: a replay, or a wrong clock. */
export const STALE_AFTER_MS = 5 * 60_000;

const PREFIXES = ["x-", "x-provider-", ""] as const;
const NAMES = {
  webhookId: ["webhook-id", "event-id", "delivery-id"],
  topic: ["webhook-topic", "topic", "event-type"],
  apiVersion: ["api-version", "webhook-api-version"],
  storeId: ["store-id"],
  timestamp: ["webhook-timestamp", "timestamp"],
  signature: ["webhook-signature", "signature", "signature-256"],
} as const;

/** The header name we document for each value (what an error names). */
export const PROVIDER_HEADERS = {
  webhookId: "X-Webhook-Id",
  topic: "X-Webhook-Topic",
  apiVersion: "X-Api-Version",
  storeId: "X-Store-Id",
  timestamp: "X-Webhook-Timestamp",
  signature: "X-Webhook-Signature",
} as const;

type Field = keyof typeof NAMES;

/** The first header present among a value's spellings (Headers.get ignores case). */
function read(headers: Headers, field: Field): string | null {
  for (const name of NAMES[field]) {
    for (const prefix of PREFIXES) {
      const value = headers.get(`${prefix}${name}`);
      if (value !== null && value.trim() !== "") return value.trim();
    }
  }
  return null;
}

export interface DeliveryHeaders {
  webhookId: string | null;
  topic: string | null;
  apiVersion: string | null;
  storeId: number;
  /** The timestamp header as sent: a signature may cover it (`timestamp.body`). */
  timestamp: string;
  sentAt: Date;
  signatures: Buffer[];
}

export type HeaderCheck =
  | { ok: true; delivery: DeliveryHeaders }
  | {
      ok: false;
      status: 400 | 401;
      code: "missing_signature" | "missing_headers" | "invalid_headers";
      message: string;
      fields: { path: string; message: string }[];
    };

/**
 * A timestamp in seconds or milliseconds since the epoch, or an ISO 8601 date-time; null for
 * anything else, a number past the last date a Date holds (year 275760) included: that Date
 * is invalid, and the stale-delivery refusal, which names it, threw on it (503, retried for
 * ever) instead of naming the header.
 */
export function parseTimestamp(raw: string): Date | null {
  let ms = Number.NaN;
  if (/^\d{1,16}(\.\d+)?$/.test(raw)) {
    const n = Number(raw);
    // Seconds until the year 5138; a larger number is milliseconds.
    ms = n >= 1e11 ? n : n * 1000;
  } else if (/^\d{4}-\d{2}-\d{2}T/.test(raw)) {
    ms = Date.parse(raw);
  }
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? null : date;
}

const SCHEMES = /^(sha256|hmac-sha256|v1)=/i;
const HEX_DIGEST = /^[0-9a-f]{64}$/i;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * The digests a signature header carries: one or several (comma- or space-separated, as during
 * a secret rotation), each hex or base64, with or without a `sha256=` (or `v1=`) scheme. Items
 * that are not a 32-byte digest (a `t=` timestamp, garbage) are left out.
 */
export function parseSignatures(header: string): Buffer[] {
  const out: Buffer[] = [];
  for (const item of header.split(/[\s,;]+/)) {
    const value = item.replace(SCHEMES, "");
    if (value === "") continue;
    if (HEX_DIGEST.test(value)) {
      out.push(Buffer.from(value, "hex"));
      continue;
    }
    if (!BASE64.test(value)) continue;
    const bytes = Buffer.from(value.replaceAll("-", "+").replaceAll("_", "/"), "base64");
    if (bytes.byteLength === 32) out.push(bytes);
  }
  return out;
}

/** Reads and checks the headers a signature check needs; says which is missing or wrong. */
export function readDeliveryHeaders(headers: Headers): HeaderCheck {
  const signature = read(headers, "signature");
  if (signature === null) {
    return {
      ok: false,
      status: 401,
      code: "missing_signature",
      message: `the delivery is not signed: ${PROVIDER_HEADERS.signature} is missing`,
      fields: [
        { path: `headers.${PROVIDER_HEADERS.signature.toLowerCase()}`, message: "required" },
      ],
    };
  }
  const storeRaw = read(headers, "storeId");
  const timestamp = read(headers, "timestamp");
  const missing = [
    ...(storeRaw === null ? [PROVIDER_HEADERS.storeId] : []),
    ...(timestamp === null ? [PROVIDER_HEADERS.timestamp] : []),
  ];
  if (missing.length > 0 || storeRaw === null || timestamp === null) {
    return {
      ok: false,
      status: 400,
      code: "missing_headers",
      message: `required provider webhook headers are missing: ${missing.join(", ")}`,
      fields: missing.map((h) => ({ path: `headers.${h.toLowerCase()}`, message: "required" })),
    };
  }
  const invalid: { path: string; message: string }[] = [];
  const storeId = Number(storeRaw);
  if (!/^\d{1,15}$/.test(storeRaw) || !Number.isSafeInteger(storeId) || storeId <= 0) {
    invalid.push({
      path: `headers.${PROVIDER_HEADERS.storeId.toLowerCase()}`,
      message: "must be the provider store ID (a whole number above 0)",
    });
  }
  const sentAt = parseTimestamp(timestamp);
  if (sentAt === null) {
    invalid.push({
      path: `headers.${PROVIDER_HEADERS.timestamp.toLowerCase()}`,
      message: "must be seconds or milliseconds since 1970, or an ISO 8601 date-time",
    });
  }
  if (invalid.length > 0 || sentAt === null) {
    return {
      ok: false,
      status: 400,
      code: "invalid_headers",
      message: "provider webhook headers are malformed",
      fields: invalid,
    };
  }
  return {
    ok: true,
    delivery: {
      webhookId: read(headers, "webhookId"),
      topic: read(headers, "topic"),
      apiVersion: read(headers, "apiVersion"),
      storeId,
      timestamp,
      sentAt,
      signatures: parseSignatures(signature),
    },
  };
}

/**
 * Whether any of the delivery's signatures is HMAC-SHA256 of the raw body with this secret (the
 * documented form), or of `timestamp.body` (tolerated). Constant-time comparisons, each of two
 * 32-byte digests.
 */
export function signatureMatches(
  signatures: Buffer[],
  secret: string,
  rawBody: Uint8Array,
  timestamp: string,
): boolean {
  if (signatures.length === 0 || secret === "") return false;
  const overBody = createHmac("sha256", secret).update(rawBody).digest();
  const overStamped = createHmac("sha256", secret).update(`${timestamp}.`).update(rawBody).digest();
  let matched = false;
  for (const given of signatures) {
    // Every comparison runs, whichever matches: the time taken says nothing about which.
    if (timingSafeEqual(given, overBody)) matched = true;
    if (timingSafeEqual(given, overStamped)) matched = true;
  }
  return matched;
}

/** Signs a body as the provider does (`sha256=<hex>`): the sandbox's twin, for tools and tests. */
export function signProviderBody(secret: string, rawBody: string | Uint8Array): string {
  return `sha256=${createHmac("sha256", secret).update(rawBody).digest("hex")}`;
}

/** Whether a delivery's timestamp is within {@link STALE_AFTER_MS} of now, either way. */
export function isFresh(sentAt: Date, now = Date.now()): boolean {
  return Math.abs(now - sentAt.getTime()) <= STALE_AFTER_MS;
}
