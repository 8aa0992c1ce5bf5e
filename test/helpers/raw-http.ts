import { connect, type Socket } from "node:net";

/** What came back on a raw HTTP/1.1 connection. */
export interface RawAnswer {
  /** The status line's code, 0 when none came. */
  status: number;
  headers: string;
  text: string;
  /** Milliseconds from the first write to the answer's first byte (Infinity when none came). */
  after: number;
  /** Whether the server closed the connection after its answer. */
  closed: boolean;
}

/**
 * Writes `first` on a raw socket to 127.0.0.1:`port`, then `next()` every 100 ms while it gives
 * something (a sender that trickles, or never finishes), until the server's answer has come and
 * the connection has closed (or, with `untilAnswer`, the whole answer has come), or 8 s have
 * passed. A raw socket, because the server may answer and close before the body is sent, which
 * an HTTP client reports as a write error instead of the answer.
 */
export function rawExchange(
  port: number,
  first: string | Buffer,
  next: () => string | Buffer | undefined = () => undefined,
  untilAnswer = false,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const start = Date.now();
    let received = "";
    let answeredAt = 0;
    const socket: Socket = connect(port, "127.0.0.1");
    const timer = setInterval(() => {
      const piece = next();
      if (piece !== undefined && !socket.destroyed) socket.write(piece);
    }, 100);
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      const end = received.indexOf("\r\n\r\n");
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1] ?? 0),
        headers: received.slice(0, end),
        text: received.slice(end + 4),
        after: answeredAt === 0 ? Number.POSITIVE_INFINITY : answeredAt - start,
        closed,
      });
    };
    const giveUp = setTimeout(() => finish(false), 8_000);
    socket.on("data", (data: Buffer) => {
      if (answeredAt === 0) answeredAt = Date.now();
      received += data.toString("latin1");
      const end = received.indexOf("\r\n\r\n");
      const length = Number(/^content-length:\s*(\d+)/im.exec(received)?.[1] ?? -1);
      if (untilAnswer && end !== -1 && received.length >= end + 4 + length) finish(false);
    });
    socket.on("error", () => {});
    socket.on("close", () => finish(answeredAt !== 0));
    socket.write(first);
  });
}
