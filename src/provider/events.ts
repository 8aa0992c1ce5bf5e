import { createHash } from "node:crypto";

/**
 * What a provider event says (docs/provider-contract.md, "Events"). The interface description
 * shows neither topic names nor payloads: we read the shapes we chose and the other plausible
 * ones, and anything else is an "unknown" event, kept and shown, never an error.
 */

export type EventKind = "claim" | "shipping_claim" | "registration" | "unknown";

export interface EventTopic {
  /** `claim/created`, `shipping_claim/status_changed`, `registration/created`; or as sent. */
  name: string | null;
  kind: EventKind;
  /** What happened (`created`, `updated`, `closed`…), when the topic says. */
  action: string | null;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null =>
  typeof v === "string" && v.trim() !== ""
    ? v.trim()
    : typeof v === "number" && Number.isFinite(v)
      ? String(v)
      : null;

const TOPIC = /^(shipping[_-]?claims?|claims?|registrations?)[/._:-]([a-z0-9_./:-]+)$/;

/**
 * `claim/created`, `claims.updated`, `CLAIM_CLOSED`, `shipping-claim/created`,
 * `shippingClaim.updated`, `registration/created`… → the kind and the action. Anything else is
 * unknown (its name kept as sent).
 */
export function classifyTopic(raw: string | null): EventTopic {
  if (raw === null || raw.trim() === "") return { name: null, kind: "unknown", action: null };
  const lower = raw.trim().toLowerCase();
  const match = TOPIC.exec(lower);
  if (!match?.[1] || !match[2]) return { name: raw.trim(), kind: "unknown", action: null };
  const subject = match[1];
  const kind: EventKind = subject.startsWith("shipping")
    ? "shipping_claim"
    : subject.startsWith("claim")
      ? "claim"
      : "registration";
  const action = match[2].replace(/[/.:-]+/g, "_");
  return { name: `${kind}/${action}`, kind, action };
}

export interface EventEnvelope {
  /** The topic the body names (a header wins over it). */
  topic: string | null;
  /** The event's ID the body names (a header wins over it). */
  eventId: string | null;
  /** The claim, shipping claim or registration itself; null when the body holds none. */
  resource: Json | null;
}

const RESOURCE_KEYS = ["claim", "shippingClaim", "shipping_claim", "registration"] as const;

/**
 * The resource inside a body: the body itself (our contract), or wrapped as `{ data: … }`,
 * `{ event, payload }`, `{ claim: … }`, `{ shippingClaim: … }` or `{ registration: … }`.
 */
export function unwrapEvent(body: unknown): EventEnvelope {
  if (!isObject(body)) return { topic: null, eventId: null, resource: null };
  const event = isObject(body.event) ? body.event : null;
  const topic =
    text(event?.topic) ??
    text(event?.type) ??
    text(event?.name) ??
    (typeof body.event === "string" ? text(body.event) : null) ??
    text(body.topic) ??
    text(body.type);
  const eventId =
    text(event?.id) ?? text(body.eventId) ?? text(body.webhookId) ?? text(body.event_id);
  for (const key of ["data", "payload"] as const) {
    if (isObject(body[key])) {
      return { topic, eventId: eventId ?? text(body.id), resource: body[key] as Json };
    }
  }
  for (const key of RESOURCE_KEYS) {
    if (isObject(body[key])) {
      return { topic, eventId: eventId ?? text(body.id), resource: body[key] as Json };
    }
  }
  return { topic, eventId, resource: body };
}

export interface ClaimFacts {
  claimId: string;
  externalId: string | null;
  /** Lower case; null when neither the body nor the topic says. */
  status: string | null;
  /** The provider's order ID. */
  orderId: number | null;
  /** The Shopify order ID the provider knows the order by. */
  sourceOrderId: string | null;
  /** The order's name or number (#1001, 1001). */
  orderName: string | null;
  /** When the claim last changed, per the provider: orders the events. */
  updatedOn: string | null;
}

const STATUS_OF_ACTION: Record<string, string> = {
  created: "open",
  opened: "open",
  closed: "closed",
  resolved: "resolved",
  approved: "approved",
  denied: "denied",
  rejected: "rejected",
  canceled: "canceled",
  cancelled: "canceled",
};

/** A date-time as ISO 8601 UTC, or null. */
export function isoOrNull(v: unknown): string | null {
  const s = text(v);
  if (s === null || !/^\d{4}-\d{2}-\d{2}/.test(s)) return null;
  const ms = Date.parse(s);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/**
 * A claim's or shipping claim's facts, from its documented opening fields (`storeId`,
 * `claimId`, `externalId`) and the fields we chose for the rest (`status`, `orderId`,
 * `sourceOrderId`, `orderName`, `updatedOn`), with their plausible variants. Null without an ID.
 */
export function readClaim(resource: Json, action: string | null): ClaimFacts | null {
  const order = isObject(resource.order) ? resource.order : {};
  const claimId =
    text(resource.claimId) ??
    text(resource.shippingClaimId) ??
    text(resource.claim_id) ??
    text(resource.id);
  if (claimId === null) return null;
  const statusText =
    text(resource.status) ??
    text(resource.claimStatus) ??
    text(resource.state) ??
    (isObject(resource.resolutionSummary) ? text(resource.resolutionSummary.status) : null);
  const status = statusText
    ? statusText.toLowerCase().replace(/\s+/g, "_")
    : action
      ? (STATUS_OF_ACTION[action] ?? null)
      : null;
  const orderIdText =
    text(resource.orderId) ?? text(order.orderId) ?? text(resource.providerOrderId) ?? null;
  const orderId =
    orderIdText && /^\d{1,15}$/.test(orderIdText) ? Number(orderIdText) : (null as number | null);
  return {
    claimId,
    externalId: text(resource.externalId) ?? text(resource.external_id),
    status,
    orderId,
    sourceOrderId:
      text(resource.sourceOrderId) ?? text(order.sourceOrderId) ?? text(resource.shopifyOrderId),
    orderName:
      text(resource.orderName) ??
      text(resource.orderNumber) ??
      text(order.orderName) ??
      text(order.name) ??
      text(resource.customerProvidedOrderNumber),
    updatedOn:
      isoOrNull(resource.updatedOn) ??
      isoOrNull(resource.updatedAt) ??
      isoOrNull(resource.updated_at) ??
      isoOrNull(resource.createdOn),
  };
}

export interface RegistrationFacts {
  registrationId: string | null;
  externalId: string | null;
  updatedOn: string | null;
}

/** The identifying fields of a registration (2.10), without its customer data. */
export function readRegistration(resource: Json): RegistrationFacts {
  return {
    registrationId: text(resource.registrationId) ?? text(resource.id),
    externalId: text(resource.externalId),
    updatedOn:
      isoOrNull(resource.canceledOn) ??
      isoOrNull(resource.updatedOn) ??
      isoOrNull(resource.createdOn),
  };
}

/** Where a body names its store: the resource's `storeId` (2.10, 2.11), or a wrapper's. */
export interface BodyStore {
  /** The store the body names; null when it names none. */
  storeId: string | null;
  /** The field read, as an error names it. */
  field: string;
}

/** The store a body names (`storeId`, or `store_id`), in the resource or its wrapper. */
export function bodyStore(body: unknown, resource: Json | null): BodyStore {
  const places: [Json | null, string][] = [
    [resource, "body.storeId"],
    [isObject(body) && body !== resource ? body : null, "body.storeId"],
  ];
  for (const [place, field] of places) {
    if (!place) continue;
    const named = text(place.storeId) ?? text(place.store_id);
    if (named !== null) return { storeId: named, field };
  }
  return { storeId: null, field: "body.storeId" };
}

/** Whether the event would change what a shop sees: a claim or registration with its ID. */
export function namesResource(kind: EventKind, resource: Json | null, action: string | null) {
  if (!resource || kind === "unknown") return false;
  if (kind === "registration") return readRegistration(resource).registrationId !== null;
  return readClaim(resource, action) !== null;
}

const sha256 = (value: string | Uint8Array) => createHash("sha256").update(value).digest("hex");

/** SHA-256 of a raw body (hex): a replayed delivery carries the very same bytes. */
export const bodyDigest = (rawBody: Uint8Array | string) => sha256(rawBody);

/**
 * What an event is, whatever delivery carries it: its kind (claim, shipping claim,
 * registration), its resource's ID and the provider's `updatedOn`. Not its action word: the topic
 * header is not signed, so `claim/created` re-sent as `claim/closed` is the same event. Without
 * an ID or an `updatedOn` the event is only its body (SHA-256 of the bytes). Hex SHA-256.
 */
export function eventIdentity(topic: string | null, body: unknown, rawBody: Uint8Array): string {
  const { kind, action } = classifyTopic(topic);
  const { resource } = unwrapEvent(body);
  if (resource && kind !== "unknown") {
    // The provider's own time of this state only: a creation time names no later change.
    const at =
      (kind === "registration" ? isoOrNull(resource.canceledOn) : null) ??
      isoOrNull(resource.updatedOn) ??
      isoOrNull(resource.updatedAt) ??
      isoOrNull(resource.updated_at);
    const id =
      kind === "registration"
        ? readRegistration(resource).registrationId
        : (readClaim(resource, action)?.claimId ?? null);
    if (id !== null && at !== null) return sha256(JSON.stringify([kind, id, at]));
  }
  return sha256(JSON.stringify(["body", bodyDigest(rawBody)]));
}

/** Why a stored body was reduced to its IDs. */
export type RedactionReason = "customer" | "retention";

/** What ties a stored event to one customer: their email, their orders. */
export interface CustomerMatch {
  /** Lower case. */
  emails: string[];
  /** Shopify order IDs (numeric, as in `orders_to_redact`). */
  sourceOrderIds: string[];
  /** The provider's IDs of those orders (from the links). */
  providerOrderIds: number[];
  /** Their names (#1001). */
  orderNames: string[];
}

const numericId = (v: string): string => /(\d+)$/.exec(v)?.[1] ?? v;
const bareName = (v: string): string => v.replace(/^#/, "");

/**
 * Whether a stored body is about this customer: it names their email anywhere (any field, any
 * case), or its claim or registration is about one of their orders.
 */
export function eventConcerns(payload: string, match: CustomerMatch): boolean {
  const lower = payload.toLowerCase();
  if (match.emails.some((email) => email !== "" && lower.includes(email))) return true;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return false;
  }
  const { resource } = unwrapEvent(body);
  if (!resource) return false;
  const facts = readClaim(resource, null);
  const order = facts ?? {
    orderId: null,
    sourceOrderId: text(resource.sourceOrderId),
    orderName: text(resource.customerProvidedOrderNumber) ?? text(resource.orderName),
  };
  if (order.sourceOrderId !== null) {
    const id = numericId(order.sourceOrderId);
    if (match.sourceOrderIds.some((s) => numericId(s) === id)) return true;
  }
  if (order.orderId !== null && match.providerOrderIds.includes(order.orderId)) return true;
  if (order.orderName !== null) {
    const name = bareName(order.orderName);
    if (match.orderNames.some((n) => bareName(n) === name)) return true;
  }
  return false;
}

/**
 * A stored body reduced to what identifies it, in the body shape of our contract, so the
 * registrations view, the claims list and a late processing still read it: the topic, the
 * event's ID, the claim's or registration's IDs, status, order references and times. Names,
 * emails, addresses and everything else are gone.
 */
export function redactedBody(payload: string, reason: RedactionReason): string {
  let body: unknown = null;
  try {
    body = JSON.parse(payload);
  } catch {
    // Not JSON: nothing to keep.
  }
  const { topic, eventId, resource } = unwrapEvent(body);
  const kept: Record<string, unknown> = { redacted: reason };
  if (topic !== null) kept.topic = topic;
  if (eventId !== null) kept.eventId = eventId;
  if (resource) {
    const claim = readClaim(resource, null);
    const registrationId = text(resource.registrationId);
    if (registrationId !== null) {
      const facts = readRegistration(resource);
      Object.assign(kept, {
        registrationId: facts.registrationId,
        externalId: facts.externalId,
        updatedOn: facts.updatedOn,
      });
    } else if (claim) {
      Object.assign(kept, {
        claimId: claim.claimId,
        externalId: claim.externalId,
        status: claim.status,
        orderId: claim.orderId,
        sourceOrderId: claim.sourceOrderId,
        orderName: claim.orderName,
        updatedOn: claim.updatedOn,
      });
    }
  }
  return JSON.stringify(
    Object.fromEntries(Object.entries(kept).filter(([, value]) => value !== null)),
  );
}
