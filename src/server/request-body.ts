import type { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { DeadlineError, withDeadline } from "../lib/deadline.ts";
import { errorResponse } from "../lib/http-errors.ts";

/**
 * The bytes one process holds, in all, of the bodies still arriving before their sender is known
 * (REQUEST_BODIES_MAX_BYTES): one per process, shared by every `readBodyFirst`. Each body
 * reserves its bytes as they arrive (what the process holds, not what a sender announces), and
 * gives them back once it is read, refused, late or cut off.
 *
 * Without it the size limit and the arrival deadline bound one body, not how many arrive at
 * once: 300 connections each sending all but the last byte of a 1 MB webhook body held 300 MB
 * for REQUEST_BODY_TIMEOUT_MS, unauthenticated, and a few thousand would pass the production
 * heap. A body that would take the process past the budget is answered 503 at once instead
 * (Shopify and the provider send it again); ordinary traffic is far below it.
 */
export class BodyBudget {
  #held = 0;

  /**
   * @param onRefused called for each body refused, with what was held and what it asked for
   *   (the caller's log line and metric; never the body).
   */
  constructor(
    readonly maxBytes: number,
    private readonly onRefused: (held: number, wanted: number) => void = () => {},
  ) {}

  /** The bytes reserved now by bodies still arriving. */
  get held(): number {
    return this.#held;
  }

  /** Reserves `bytes`, or refuses (false) when they would take the process past the budget. */
  reserve(bytes: number): boolean {
    // Written so that a length that is not a number (never from Node's parser) is refused.
    if (!(this.#held + bytes <= this.maxBytes)) {
      this.onRefused(this.#held, bytes);
      return false;
    }
    this.#held += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#held -= bytes;
  }
}

/**
 * What a body read before its sender is known may take: its size, and the time it may take to
 * arrive after the request's headers.
 */
export interface BodyBounds {
  maxBytes: number;
  /** REQUEST_BODY_TIMEOUT_MS: a body not whole by then is answered 408. */
  arrivalMs: number;
  /** The process's budget of bodies arriving at once: past it, 503. */
  budget: BodyBudget;
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
 * - Past the process's budget of bodies arriving at once (`budget`): 503 `too_many_bodies` with
 *   Retry-After, as soon as the bytes that arrived would pass it. What the body reserved is
 *   given back on every way out.
 *
 * A refusal is answered before the rest of the body has arrived: the lingering close
 * (lib/lingering-close.ts) ends that connection. The route then reads the body from Hono's
 * cache (`c.req.arrayBuffer()`, `parseBody()`, `text()`): a body with Content-Length on
 * @hono/node-server's direct path, any other from the buffer read here.
 */
export function readBodyFirst(bounds: BodyBounds): MiddlewareHandler {
  const { budget } = bounds;
  // Every body held is gone within the arrival deadline: the budget is free again by then.
  const retryAfter = String(Math.ceil(bounds.arrivalMs / 1000));
  const busy = (c: Context) => {
    c.header("Retry-After", retryAfter);
    return errorResponse(
      c,
      503,
      "too_many_bodies",
      "too many request bodies are arriving at once; send this one again later",
    );
  };
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const length = c.req.header("content-length");
    // No Content-Length (chunked, or a runtime that does not say): read as a stream.
    const streamed = length === undefined || c.req.header("transfer-encoding") !== undefined;
    if (!streamed) {
      const announced = Number(length);
      if (announced === 0) return next();
      if (announced > bounds.maxBytes) return bounds.tooLarge(c);
    }
    // What this body has reserved of the budget, by the bytes that arrived (not the length it
    // announced: a connection that announces 1 MB and sends nothing holds nothing, and 33 such
    // would otherwise have kept every webhook out). `open` ends when the read has settled, so a
    // chunk read after a deadline reserves nothing that would not be given back.
    let held = 0;
    let open = true;
    const take = (bytes: number) => {
      if (!open || !budget.reserve(bytes)) return false;
      held += bytes;
      return true;
    };
    const reading = streamed ? readStreamed(c, bounds.maxBytes, take) : readAnnounced(c, take);
    let outcome: "read" | "too-large" | "busy" | "late" | "cut-off";
    try {
      outcome = await withDeadline(reading, bounds.arrivalMs, "the request body");
    } catch (error) {
      outcome = error instanceof DeadlineError ? "late" : "cut-off";
    } finally {
      open = false;
      budget.release(held);
    }
    if (outcome === "read") return next();
    if (outcome === "too-large") return bounds.tooLarge(c);
    if (outcome === "busy") return busy(c);
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
 * A body of announced length, read by @hono/node-server's direct path (`c.req.arrayBuffer()`,
 * no web stream), each chunk reserved with `take` as it arrives: the count listens to the same
 * IncomingMessage, attached in the same turn as the read's own listener, so it sees every chunk.
 * Past the budget the read is left to the lingering close. Outside Node (no IncomingMessage in
 * the context) the announced length's checks are the only ones.
 */
function readAnnounced(c: Context, take: (bytes: number) => boolean): Promise<"read" | "busy"> {
  const read = c.req.arrayBuffer().then(() => "read" as const);
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (!incoming) return read;
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer | string) => {
      if (take(chunk.length)) return;
      incoming.off("data", onData);
      resolve("busy");
    };
    incoming.on("data", onData);
    read.then(
      (outcome) => {
        incoming.off("data", onData);
        resolve(outcome);
      },
      (error: unknown) => {
        incoming.off("data", onData);
        reject(error);
      },
    );
  });
}

/**
 * A body of no announced length, read up to `maxBytes` (as Hono's bodyLimit does), each chunk
 * reserved with `take` before it is kept: past either, reading stops and the rest is left to the
 * lingering close. A body read whole becomes the request's body.
 */
async function readStreamed(
  c: Context,
  maxBytes: number,
  take: (bytes: number) => boolean,
): Promise<"read" | "too-large" | "busy"> {
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
    if (!take(value.byteLength)) return "busy";
    chunks.push(value);
  }
  c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks) });
  return "read";
}
