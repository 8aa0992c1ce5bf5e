import type { Context, MiddlewareHandler } from "hono";
import { DeadlineError, withDeadline } from "../lib/deadline.ts";
import { errorResponse } from "../lib/http-errors.ts";

/**
 * What a body read before its sender is known may take: its size, and the time it may take to
 * arrive after the request's headers.
 */
export interface BodyBounds {
  maxBytes: number;
  /** REQUEST_BODY_TIMEOUT_MS: a body not whole by then is answered 408. */
  arrivalMs: number;
  /** The answer to a body over `maxBytes` (413), in the route's words. */
  tooLarge(c: Context): Response | Promise<Response>;
}

/**
 * Reads a request's body whole, within its bounds, before the route runs: the webhooks' (whose
 * sender is known only from the signature of the whole body) and every small body the web app
 * reads before it authenticates (forms, the admin API's JSON).
 *
 * - Over `maxBytes`: 413, from Content-Length before a byte is read, or as soon as a chunked
 *   body (or one of no announced length) passes it.
 * - Not whole `arrivalMs` after the headers: 408. Node's HTTP server would otherwise wait up to
 *   its `requestTimeout` (5 minutes) for a sender that trickles its body, holding what arrived:
 *   300 such connections held 300 MB of webhook bodies, unauthenticated. Shopify waits 5 s for
 *   its answer, so a delivery that slow has already failed on its side and is sent again.
 * - Cut off by the client (the connection closed mid-body): 400, which nobody reads, instead
 *   of an error thrown in the route (an "unhandled error" line per hang-up, and a login form
 *   counted as a wrong token).
 *
 * A refusal is answered before the rest of the body has arrived: the lingering close
 * (lib/lingering-close.ts) ends that connection. The route then reads the body from Hono's
 * cache (`c.req.arrayBuffer()`, `parseBody()`, `text()`): a body with Content-Length on
 * @hono/node-server's direct path, any other from the buffer read here.
 */
export function readBodyFirst(bounds: BodyBounds): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const length = c.req.header("content-length");
    // No Content-Length (chunked, or a runtime that does not say): read as a stream.
    const streamed = length === undefined || c.req.header("transfer-encoding") !== undefined;
    if (!streamed) {
      if (Number(length) === 0) return next();
      if (Number(length) > bounds.maxBytes) return bounds.tooLarge(c);
    }
    const reading = streamed
      ? readStreamed(c, bounds.maxBytes)
      : c.req.arrayBuffer().then(() => "read" as const);
    let outcome: "read" | "too-large" | "late" | "cut-off";
    try {
      outcome = await withDeadline(reading, bounds.arrivalMs, "the request body");
    } catch (error) {
      outcome = error instanceof DeadlineError ? "late" : "cut-off";
    }
    if (outcome === "read") return next();
    if (outcome === "too-large") return bounds.tooLarge(c);
    if (outcome === "late") {
      return errorResponse(
        c,
        408,
        "request_timeout",
        `the body did not arrive within ${bounds.arrivalMs} ms of the headers; send it at once`,
        [{ path: "body", message: `incomplete after ${bounds.arrivalMs} ms` }],
      );
    }
    return errorResponse(
      c,
      400,
      "body_incomplete",
      "the connection closed before the body had arrived",
      [{ path: "body", message: "incomplete" }],
    );
  };
}

/**
 * A body of no announced length, read up to `maxBytes` (as Hono's bodyLimit does): past it,
 * reading stops and the rest is left to the lingering close. A body read whole becomes the
 * request's body.
 */
async function readStreamed(c: Context, maxBytes: number): Promise<"read" | "too-large"> {
  const body = c.req.raw.body;
  if (!body) return "read";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) return "too-large";
    chunks.push(value);
  }
  c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks) });
  return "read";
}
