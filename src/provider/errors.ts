import { type HeaderSource, parseRateLimitHeaders } from "./rate-limit-headers.ts";

/**
 * One error class per failure a caller must tell apart (docs/principles.md: errors are types;
 * after stripe-node's generateV1Error). Each keeps the request ID, status, what the body said (its code and the
 * paths of the fields it names: never its free text, which can quote customer data) and whether
 * retrying can help.
 */
/** What an error body is kept as: logged, stored in dead letters, shown to operators. */
export interface ErrorBodySummary {
  code?: string;
  /** The paths of the fields the provider named. */
  fields?: string[];
  existingOrderId?: number;
  existingLineItemId?: number;
}

export interface ProviderErrorDetails {
  status?: number;
  requestId?: string;
  body?: ErrorBodySummary;
  method: string;
  path: string;
  retryAfterMs?: number;
  cause?: unknown;
}

export class ProviderError extends Error {
  override name = "ProviderError";
  readonly status: number | undefined;
  readonly requestId: string | undefined;
  readonly body: ErrorBodySummary | undefined;
  readonly method: string;
  readonly path: string;
  readonly retryAfterMs: number | undefined;
  /** Whether sending the same request again later can succeed. */
  readonly retryable: boolean = false;

  constructor(message: string, details: ProviderErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.requestId = details.requestId;
    this.body = details.body;
    this.method = details.method;
    this.path = details.path;
    this.retryAfterMs = details.retryAfterMs;
  }
}

export interface FieldError {
  path: string;
  message: string;
}

/**
 * The parts of an error body that carry no customer data: the code and the field paths. The
 * provider's messages are free text that can quote what was sent (an email, an address).
 */
export function summarizeErrorBody(extracted: ExtractedBody): ErrorBodySummary | undefined {
  const summary: ErrorBodySummary = {
    ...(extracted.code ? { code: extracted.code } : {}),
    ...(extracted.fields.length > 0 ? { fields: extracted.fields.map((f) => f.path) } : {}),
    ...(extracted.existingOrderId !== undefined
      ? { existingOrderId: extracted.existingOrderId }
      : {}),
    ...(extracted.existingLineItemId !== undefined
      ? { existingLineItemId: extracted.existingLineItemId }
      : {}),
  };
  return Object.keys(summary).length > 0 ? summary : undefined;
}

/** 400/422: the provider refused the body. The same body will be refused again. */
export class ProviderValidationError extends ProviderError {
  override name = "ProviderValidationError";
  readonly fields: FieldError[];
  constructor(message: string, details: ProviderErrorDetails & { fields: FieldError[] }) {
    super(message, details);
    this.fields = details.fields;
  }
}

/**
 * What a conflict means, decided once where the provider's answer is read (the code it sent, or
 * its 400/422 text in the other plausible shapes, docs/provider-contract.md):
 * `duplicate_order` and `duplicate_line_item` — it is already there; `order_canceled` — the
 * order is canceled there and immutable; `other` — anything else.
 */
export type ConflictKind = "duplicate_order" | "duplicate_line_item" | "order_canceled" | "other";

function conflictKind(code: string, text = code): ConflictKind {
  if (code === "duplicate_order" || code === "duplicate_line_item") return code;
  // "order_canceled", "order_cancelled", "already_canceled", or a bare 409 saying so.
  if (/cancel/i.test(text)) return "order_canceled";
  return "other";
}

/** 409: the resource exists already, or the order is canceled and immutable. */
export class ProviderConflictError extends ProviderError {
  override name = "ProviderConflictError";
  readonly code: string;
  readonly kind: ConflictKind;
  readonly existingOrderId: number | undefined;
  readonly existingLineItemId: number | undefined;
  constructor(
    message: string,
    details: ProviderErrorDetails & {
      code: string;
      /** The provider's message, read with the code to tell what the conflict means. */
      text?: string;
      existingOrderId?: number;
      existingLineItemId?: number;
    },
  ) {
    super(message, details);
    this.code = details.code;
    this.kind = conflictKind(details.code, details.text);
    this.existingOrderId = details.existingOrderId;
    this.existingLineItemId = details.existingLineItemId;
  }
}

export type ProviderAuthKind = "invalid_token" | "insufficient_scope" | "invalid_client";

/** 401/403: credentials or scopes are wrong. A configuration error: an operator must act. */
export class ProviderAuthError extends ProviderError {
  override name = "ProviderAuthError";
  readonly kind: ProviderAuthKind;
  constructor(message: string, details: ProviderErrorDetails & { kind: ProviderAuthKind }) {
    super(message, details);
    this.kind = details.kind;
  }
}

/** 404: the order, line item, product or store is unknown (or not covered by the token). */
export class ProviderNotFoundError extends ProviderError {
  override name = "ProviderNotFoundError";
}

/** 429: over the budget. Retry after `retryAfterMs`; not a failure of the request itself. */
export class ProviderRateLimitError extends ProviderError {
  override name = "ProviderRateLimitError";
  override readonly retryable = true;
}

/** 5xx: the provider failed; the same request may succeed later. */
export class ProviderServerError extends ProviderError {
  override name = "ProviderServerError";
  override readonly retryable = true;
}

/**
 * No usable answer: connection refused or reset, timeout, a dropped response. For a write,
 * `maybeCommitted` says the request may have been applied even though no answer came back;
 * the caller must look the effect up before repeating a create.
 */
export class ProviderConnectionError extends ProviderError {
  override name = "ProviderConnectionError";
  override readonly retryable = true;
  readonly maybeCommitted: boolean;
  constructor(message: string, details: ProviderErrorDetails & { maybeCommitted: boolean }) {
    super(message, details);
    this.maybeCommitted = details.maybeCommitted;
  }
}

/** The request ID under any of the spellings services use. */
export function requestIdOf(headers: HeaderSource): string | undefined {
  return (
    headers.get("x-request-id") ??
    headers.get("request-id") ??
    headers.get("x-correlation-id") ??
    undefined
  );
}

export interface ExtractedBody {
  code: string | undefined;
  message: string | undefined;
  fields: FieldError[];
  existingOrderId: number | undefined;
  existingLineItemId: number | undefined;
}

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
const str = (v: unknown) => (typeof v === "string" && v.length > 0 ? v : undefined);
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

function toFields(list: unknown): FieldError[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((item): FieldError[] => {
    if (typeof item === "string") return [{ path: "", message: item }];
    const r = asRecord(item);
    if (!r) return [];
    const rawPath = r.path ?? r.field ?? r.pointer ?? r.name ?? r.instancePath;
    const path = Array.isArray(rawPath) ? rawPath.join(".") : (str(rawPath) ?? "");
    return [
      {
        path: path.replace(/^\//, "").replaceAll("/", "."),
        message: str(r.message) ?? str(r.detail) ?? "invalid",
      },
    ];
  });
}

/**
 * Reads any of the error body shapes docs/provider-contract.md tolerates: ours
 * (`{ error: { code, message, fields } }`), RFC 7807 problem details, `{ message }`,
 * `{ errors: [...] }`, an OAuth `{ error, error_description }`, plain text.
 */
export function extractErrorBody(body: unknown): ExtractedBody {
  const root = asRecord(body);
  if (!root) {
    return {
      code: undefined,
      message: typeof body === "string" && body.length > 0 ? body : undefined,
      fields: [],
      existingOrderId: undefined,
      existingLineItemId: undefined,
    };
  }
  const nested = asRecord(root.error);
  const source = nested ?? root;
  return {
    code: str(source.code) ?? str(root.error) ?? str(root.type),
    message:
      str(source.message) ??
      str(root.error_description) ??
      str(root.detail) ??
      str(root.title) ??
      str(root.message),
    fields: [...toFields(source.fields), ...toFields(root.errors), ...toFields(source.errors)],
    existingOrderId: num(source.existingOrderId) ?? num(root.existingOrderId) ?? num(root.orderId),
    existingLineItemId: num(source.existingLineItemId) ?? num(root.existingLineItemId),
  };
}

/** The one status → class mapping. Why each is retried or not is written next to its class. */
export function errorFromResponse(
  response: { status: number; headers: HeaderSource },
  body: unknown,
  request: { method: string; path: string },
): ProviderError {
  const extracted = extractErrorBody(body);
  const limits = parseRateLimitHeaders(response.headers);
  const summary = summarizeErrorBody(extracted);
  const details: ProviderErrorDetails = {
    status: response.status,
    ...(summary ? { body: summary } : {}),
    method: request.method,
    path: request.path,
    ...(requestIdOf(response.headers) ? { requestId: requestIdOf(response.headers) } : {}),
    ...(limits.retryAfterMs !== undefined ? { retryAfterMs: limits.retryAfterMs } : {}),
  };
  // The message names the code and the fields, never the provider's text (it can quote data).
  const what = `${request.method} ${request.path} answered ${response.status}`;
  const named = [
    extracted.code,
    extracted.fields.length > 0
      ? `fields ${extracted.fields.map((f) => f.path || "(body)").join(", ")}`
      : undefined,
  ].filter(Boolean);
  const message = named.length > 0 ? `${what}: ${named.join("; ")}` : what;
  const status = response.status;
  const text = `${extracted.code ?? ""} ${extracted.message ?? ""}`.toLowerCase();

  if (status === 400 || status === 422) {
    // A 400 naming sourceOrderId as a duplicate is a conflict in disguise (the provider's public docs).
    if (/sourceorderid/.test(text) && /(exist|duplicate|unique|already)/.test(text)) {
      return new ProviderConflictError(message, {
        ...details,
        code: "duplicate_order",
        ...(extracted.existingOrderId !== undefined
          ? { existingOrderId: extracted.existingOrderId }
          : {}),
      });
    }
    if (/cancel/.test(text) && /(immutable|already|canceled|cancelled)/.test(text)) {
      return new ProviderConflictError(message, { ...details, code: "order_canceled" });
    }
    // The field paths, never the provider's text about them (it can quote what was sent).
    const fields = extracted.fields.map((f) => ({
      path: f.path,
      message: "refused by the provider",
    }));
    return new ProviderValidationError(message, { ...details, fields });
  }
  if (status === 401) {
    return new ProviderAuthError(message, {
      ...details,
      kind: extracted.code === "invalid_client" ? "invalid_client" : "invalid_token",
    });
  }
  if (status === 403) {
    const kind = /expired|invalid.?token/.test(text) ? "invalid_token" : "insufficient_scope";
    return new ProviderAuthError(message, { ...details, kind });
  }
  if (status === 404) return new ProviderNotFoundError(message, details);
  if (status === 409) {
    return new ProviderConflictError(message, {
      ...details,
      code: extracted.code ?? "conflict",
      text,
      ...(extracted.existingOrderId !== undefined
        ? { existingOrderId: extracted.existingOrderId }
        : {}),
      ...(extracted.existingLineItemId !== undefined
        ? { existingLineItemId: extracted.existingLineItemId }
        : {}),
    });
  }
  if (status === 429) {
    // Without a Retry-After, a full second is the smallest safe wait.
    return new ProviderRateLimitError(message, {
      ...details,
      retryAfterMs: details.retryAfterMs ?? 1_000,
    });
  }
  if (status >= 500) return new ProviderServerError(message, details);
  return new ProviderError(message, details);
}
