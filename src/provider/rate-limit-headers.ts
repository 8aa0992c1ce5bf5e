/** Response headers, read by name case-insensitively (a fetch `Headers` object is one). */
export interface HeaderSource {
  get(name: string): string | null;
}

/** What a response says about the store's budget (docs/provider-interface.md, section 8). */
export interface RateLimitInfo {
  limit?: number;
  remaining?: number;
  /** Milliseconds until the window frees (RateLimit-Reset is in seconds). */
  resetMs?: number;
  /** Milliseconds to wait after a 429 (Retry-After: seconds or an HTTP date). */
  retryAfterMs?: number;
}

function whole(value: string | null): number | undefined {
  if (value === null) return undefined;
  // Structured-field variants ("100;w=60") carry the number first.
  const n = Number(value.split(/[;,]/)[0]?.trim());
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.ceil(seconds * 1000) : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Parses RateLimit-* (and the older X-RateLimit-* spelling); garbage and absence are undefined. */
export function parseRateLimitHeaders(headers: HeaderSource, now = Date.now()): RateLimitInfo {
  const get = (name: string) =>
    headers.get(`ratelimit-${name}`) ?? headers.get(`x-ratelimit-${name}`);
  const info: RateLimitInfo = {};
  const limit = whole(get("limit"));
  const remaining = whole(get("remaining"));
  const reset = whole(get("reset"));
  const retryAfter = parseRetryAfter(headers.get("retry-after"), now);
  if (limit !== undefined) info.limit = limit;
  if (remaining !== undefined) info.remaining = remaining;
  if (reset !== undefined) info.resetMs = reset * 1000;
  if (retryAfter !== undefined) info.retryAfterMs = retryAfter;
  return info;
}
