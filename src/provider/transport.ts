import { Agent, type Dispatcher, request } from "undici";
import { httpClientAttributes, inSpan, markFailed, SpanKind, tracingOn } from "../lib/tracing.ts";
import type { HeaderSource } from "./rate-limit-headers.ts";

export interface TransportRequest {
  method: "GET" | "POST" | "PUT" | "DELETE";
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

export interface TransportResponse {
  status: number;
  headers: HeaderSource;
  /** Reads the whole body; rejects when the answer is cut off or the signal aborts it. */
  text(): Promise<string>;
}

/**
 * How the provider client puts one request on the wire. Rejects only when no answer came back
 * (connection refused or reset, the signal aborted it); any status is an answer.
 */
export type Transport = (req: TransportRequest) => Promise<TransportResponse>;

/**
 * The default: undici's `request` on one keep-alive connection pool per origin, shared by every
 * client of the process (one per shop). It skips what `fetch` does for browsers (web streams,
 * Request/Response/Headers objects, CORS and redirect handling), which was a tenth of a sync
 * worker's CPU (BENCHMARKS.md, bench:worker).
 */
let sharedAgent: Agent | undefined;
function agent(): Agent {
  // undici's defaults, as `fetch`'s global dispatcher had them: idle sockets kept 4 s (less when
  // the server's Keep-Alive header says so), so a socket the server is closing is not reused.
  sharedAgent ??= new Agent();
  return sharedAgent;
}

class RecordHeaders implements HeaderSource {
  readonly #raw: Dispatcher.ResponseData["headers"];
  constructor(raw: Dispatcher.ResponseData["headers"]) {
    this.#raw = raw;
  }
  get(name: string): string | null {
    // undici gives header names in lower case; a repeated header comes as an array.
    const value = this.#raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }
}

export function undiciTransport(dispatcher?: Dispatcher): Transport {
  return async (req) => {
    const res = await request(req.url, {
      method: req.method,
      headers: req.headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
      signal: req.signal,
      dispatcher: dispatcher ?? agent(),
    });
    return {
      status: res.statusCode,
      headers: new RecordHeaders(res.headers),
      text: () => res.body.text(),
    };
  };
}

/** A `fetch` (tests and chaos runs inject faults or counters through it). */
export function fetchTransport(fetchFn: typeof fetch): Transport {
  return async (req) => {
    const response = await fetchFn(req.url, {
      method: req.method,
      headers: req.headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
      signal: req.signal,
    });
    return { status: response.status, headers: response.headers, text: () => response.text() };
  };
}

/**
 * A transport whose every request is an HTTP client span (OpenTelemetry's conventions: named
 * by its method; method, server, URL without query, status; a 4xx or 5xx answer or no answer
 * marks it failed). Off, the transport itself.
 */
export function tracedTransport(transport: Transport): Transport {
  return (req) => {
    if (!tracingOn()) return transport(req);
    return inSpan(
      req.method,
      { kind: SpanKind.CLIENT, attributes: httpClientAttributes(req.method, req.url) },
      async (span) => {
        const response = await transport(req);
        span.setAttribute("http.response.status_code", response.status);
        if (response.status >= 400) markFailed(span, String(response.status));
        return response;
      },
    );
  };
}
