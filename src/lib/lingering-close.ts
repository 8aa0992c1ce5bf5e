import { type IncomingMessage, type ServerOptions, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** At most this many body bytes are read after a refusal; then the socket is no longer read. */
export const LINGER_MAX_BYTES = 1024 * 1024;
/** The connection is destroyed this long after the answer was sent, if the client has not closed it. */
export const LINGER_MAX_MS = 2_000;

/**
 * Whether the request announced a body that has not fully arrived. A request without
 * Content-Length or Transfer-Encoding has none, even before the parser has marked it complete
 * (an answer given synchronously from the headers).
 */
function bodyStillComing(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers["content-length"];
  return (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
}

/**
 * The answer to a request, with a lingering close when it is sent before the request's body was
 * read (a refusal from the headers: no session, a bad signature, a body over its limit).
 *
 * Node's HTTP server would otherwise keep reading and discarding the rest of that body to reuse
 * the connection (and @hono/node-server drains it for 500 ms), so a sender could make the server
 * read tens of MB after the refusal. Closing at once is no better: closing a socket with unread
 * bytes resets it, and the reset can reach the client before it has read the answer. So, as
 * nginx's `lingering_close` does, the answer says `Connection: close`; once it is sent the
 * socket is half-closed (FIN after the answer) and what still arrives is discarded, up to
 * LINGER_MAX_BYTES: past that the socket is no longer read (a sender that keeps on blocks on its
 * full buffers, with the answer to read). LINGER_MAX_MS after the answer the socket is
 * destroyed; a client that reads the answer and closes ends it sooner. Requests whose body was
 * read keep their keep-alive connection unchanged.
 */
export class LingeringResponse<
  Request extends IncomingMessage = IncomingMessage,
> extends ServerResponse<Request> {
  constructor(req: Request, options?: { highWaterMark?: number }) {
    // Node's server passes options (the socket's highWaterMark) that @types/node does not name.
    super(...([req, options] as unknown as [Request]));
    // First among the 'finish' listeners: before Node's own (registered after this constructor)
    // dumps the rest of the body and closes the socket.
    this.on("finish", () => {
      const socket = this.socket;
      if (socket && !socket.destroyed && bodyStillComing(this.req)) linger(socket, this.req);
    });
  }

  override writeHead(statusCode: number, ...rest: unknown[]): this {
    // Decided when the head is written: a body still coming ends the connection.
    if (!this.headersSent && bodyStillComing(this.req)) this.setHeader("Connection", "close");
    return super.writeHead(statusCode, ...(rest as [string]));
  }
}

/** Half-closes `socket` after the answer, reads what still comes within the bounds, destroys it. */
function linger(socket: Socket, req: IncomingMessage): void {
  // Node's server ends a `Connection: close` answer with socket.destroySoon(), which destroys
  // the socket (resets it, bytes unread) as soon as the answer is written: here it only sends
  // the FIN, and the timer below destroys it.
  (socket as Socket & { destroySoon?: () => void }).destroySoon = () => {
    if (socket.writable) socket.end();
  };
  socket.end();
  let read = 0;
  const count = (chunk: Buffer) => {
    read += chunk.length;
    // A paused request stops the parser reading the socket once its small buffer is full; any
    // chunk past the budget pauses it again (@hono/node-server's drain resumes it once).
    if (read >= LINGER_MAX_BYTES) req.pause();
  };
  const timer = setTimeout(() => socket.destroy(), LINGER_MAX_MS);
  timer.unref();
  socket.once("close", () => {
    clearTimeout(timer);
    req.off("data", count);
  });
  // Read through the request (a 'data' listener keeps Node from dumping the body unseen, which
  // would give nothing to count). The answer is sent: a reader still attached (a web stream of
  // the body, which pauses the request when its queue is full) gets nothing more, as when Node
  // dumps a body.
  req.removeAllListeners("data");
  req.on("data", count);
  req.resume();
}

/** The options of an HTTP server whose refusals close with a lingering close. */
export const LINGERING_CLOSE: ServerOptions = { ServerResponse: LingeringResponse };
