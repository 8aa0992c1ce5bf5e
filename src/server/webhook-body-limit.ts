import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { errorResponse } from "../lib/http-errors.ts";

/**
 * A webhook body's size limit, answered 413. Hono's bodyLimit touches `Request.body`, which makes
 * @hono/node-server build a web stream for every request; senders of webhooks send
 * Content-Length, so that case is checked from the header and the body is then read on the
 * server's direct path. Chunked bodies keep the streaming check.
 */
export function webhookBodyLimit(maxBytes: number): MiddlewareHandler {
  const tooLarge = (c: Context) =>
    errorResponse(c, 413, "payload_too_large", `webhook bodies are limited to ${maxBytes} bytes`);
  const streamingLimit = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async (c, next) => {
    const length = c.req.header("content-length");
    if (length === undefined || c.req.header("transfer-encoding") !== undefined) {
      return streamingLimit(c, next);
    }
    return Number(length) > maxBytes ? tooLarge(c) : next();
  };
}
