import { Agent, request } from "node:http";
import { connect, type Socket } from "node:net";
import type { ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from "../../src/lib/lingering-close.ts";
import { listen } from "../../src/lib/listen.ts";

/**
 * The lingering close of src/lib/lingering-close.ts, on the server the web role listens with
 * (src/lib/listen.ts), with a route that refuses from the headers and one that reads the body.
 * test/security/preauth-memory.security.test.ts checks the web role's own routes.
 */
let server: ServerType;
let port: number;
/** The server's side of each connection, in the order they were accepted. */
const accepted: Socket[] = [];

beforeAll(async () => {
  const app = new Hono();
  app.post("/refuse", (c) => c.json({ error: "who is asking?" }, 401));
  app.post("/read", async (c) => c.json({ bytes: (await c.req.arrayBuffer()).byteLength }));
  ({ server, port } = await listen(app.fetch, { port: 0, host: "127.0.0.1", what: "PORT" }));
  server.on("connection", (socket: Socket) => accepted.push(socket));
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const closed = (socket: Socket) =>
  socket.destroyed ? Promise.resolve() : new Promise<void>((r) => socket.once("close", () => r()));

/** The head of the first answer on `socket` (the text up to the blank line). */
function answerOn(socket: Socket): Promise<string> {
  let received = "";
  if (socket.destroyed) return Promise.reject(new Error("closed before an answer was read"));
  return new Promise((resolve, reject) => {
    socket.on("data", (data: Buffer) => {
      received += data.toString("latin1");
      const end = received.indexOf("\r\n\r\n");
      if (end !== -1) resolve(received.slice(0, end));
    });
    socket.once("close", () => reject(new Error(`closed without an answer: ${received}`)));
  });
}

const head = (path: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${length}\r\n\r\n`;

/** The server's side of the connection accepted after `count` others. */
const acceptedAfter = (count: number) =>
  expect
    .poll(() => accepted[count], { timeout: 5_000 })
    .toBeDefined()
    .then(() => accepted[count] as Socket);

describe("a request answered before its body was read", () => {
  it("gets its answer though it reads only once the server has stopped reading", async () => {
    const before = accepted.length;
    const client = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    client.on("error", () => {});
    // Reads nothing at first, and writes as fast as the socket takes it.
    client.pause();
    const piece = Buffer.alloc(64 * 1024, "x");
    let writing = true;
    const pump = () => {
      while (writing && !client.destroyed) {
        if (!client.write(piece)) {
          client.once("drain", pump);
          return;
        }
      }
    };
    client.write(head("/refuse", 64 * 1024 * 1024));
    pump();
    const socket = await acceptedAfter(before);
    // The server read its budget after the answer (a reset now would lose the unread answer).
    await expect
      .poll(() => socket.bytesRead, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(LINGER_MAX_BYTES);
    const answer = answerOn(client);
    client.resume();
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toMatch(/^connection: close$/im);
    writing = false;
    // The server ends it, LINGER_MAX_MS after the answer: the client never ends its side. (Not
    // the client's close: that came only from the reset of bytes the server left unread, which
    // a server that had read all the client sent would not send, and the wait had no end.)
    await closed(socket);
    client.destroy();
    // The budget, plus what the request buffered before the answer and one read of the socket.
    expect(socket.bytesRead).toBeLessThan(LINGER_MAX_BYTES + 512 * 1024);
  });

  it("is closed at once when the client closes after the answer", async () => {
    const before = accepted.length;
    const client = connect({ port, host: "127.0.0.1" });
    const answer = answerOn(client);
    client.write(head("/refuse", 10_000_000));
    client.write(Buffer.alloc(1024, "x"));
    expect(await answer).toMatch(/^HTTP\/1\.1 401 /);
    const socket = await acceptedAfter(before);
    const since = Date.now();
    client.end();
    await closed(socket);
    // The client's FIN ends it, not the LINGER_MAX_MS timer.
    expect(Date.now() - since).toBeLessThan(LINGER_MAX_MS / 2);
    client.destroy();
  });

  it("keeps the connection of requests whose body was read", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (length: number) =>
      new Promise<{ status: number; connection: string | undefined; reused: boolean }>(
        (resolve, reject) => {
          const req = request(
            { agent, host: "127.0.0.1", port, path: "/read", method: "POST" },
            (res) => {
              res.resume();
              res.on("end", () =>
                resolve({
                  status: res.statusCode ?? 0,
                  connection: res.headers.connection,
                  reused: req.reusedSocket,
                }),
              );
            },
          );
          req.on("error", reject);
          req.end("x".repeat(length));
        },
      );
    try {
      const first = await post(10);
      const second = await post(100_000);
      expect(first).toEqual({ status: 200, connection: "keep-alive", reused: false });
      expect(second).toEqual({ status: 200, connection: "keep-alive", reused: true });
    } finally {
      agent.destroy();
    }
  });
});
