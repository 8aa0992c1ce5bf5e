import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWebRole, type WebRole } from "../helpers/web-role.ts";

/**
 * Issue 31, vulnerability 1: `POST /settings/catalog?embedded=1` without a session token made the
 * embedded sign-in read the whole multipart body (looking for an `id_token` field) before it knew
 * who was asking and before the route's 5 MB limit; 1 GB of body took a production process from
 * 150 MB to 6.3 GB. The web role runs here as its own OS process, so its resident memory is read
 * from /proc/<pid>/status while the headers of a 1 GB body (sent lazily, never built in memory)
 * reach it: the answer must come while almost none of the body was sent, and the process must
 * grow by less than 20 MB.
 */
const GIB = 1024 ** 3;
const MIB = 1024 ** 2;
const RSS_GROWTH_LIMIT = 20 * MIB;
const SHOPIFY_API_SECRET = "preauth-memory-secret";

let web: WebRole;
let port: number;
/** The child's resident set size in bytes (VmRSS). */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) * 1024;
}

beforeAll(async () => {
  web = await startWebRole({ SHOPIFY_API_SECRET });
  port = web.port;
}, 60_000);

afterAll(async () => {
  await web?.stop();
});

interface Outcome {
  status: number;
  /** Body bytes handed to the socket before the answer came. */
  written: number;
  /** The child's largest resident set size seen while the body was being sent. */
  peakRss: number;
}

/**
 * POSTs the headers of a `size`-byte multipart body (with Content-Length, or chunked) on a raw
 * socket and then writes it in 64 KB chunks as fast as the socket takes them, sampling the
 * child's RSS, until the server's status line arrives, the body is sent, or the child has grown
 * past `abortGrowth` (then the test has already failed, and sending more would only swap the
 * machine). A raw socket, because the server may close the connection right after its answer,
 * which an HTTP client reports as a write error instead of the answer.
 */
function sendHugeUpload(
  path: string,
  size: number,
  mode: "content-length" | "chunked",
  type: string,
  baseline: number,
): Promise<Outcome> {
  const pid = web.pid;
  const boundary = "----preauth-memory-boundary";
  const head = [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    `Content-Type: ${type === "multipart" ? `multipart/form-data; boundary=${boundary}` : type}`,
    // A non-browser client names whatever origin it likes: CSRF checks do not stop it.
    `Origin: http://127.0.0.1:${port}`,
    mode === "content-length" ? `Content-Length: ${size}` : "Transfer-Encoding: chunked",
    "",
    "",
  ].join("\r\n");
  const piece = Buffer.alloc(64 * 1024, "x");
  const framed =
    mode === "chunked"
      ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
      : piece;
  const abortGrowth = 256 * 1024 * 1024;
  return new Promise((resolve) => {
    let written = 0;
    let peakRss = rssOf(pid);
    let done = false;
    let received = "";
    const finish = (status: number) => {
      if (done) return;
      done = true;
      clearInterval(sampler);
      // Memory taken while the request was read shows in the samples up to the answer.
      peakRss = Math.max(peakRss, rssOf(pid));
      socket.destroy();
      resolve({ status, written, peakRss });
    };
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, rssOf(pid));
      if (peakRss - baseline > abortGrowth) finish(0);
    }, 20);
    const socket = connect(port, "127.0.0.1");
    socket.on("data", (data: Buffer) => {
      received += data.toString("latin1");
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1];
      if (status) finish(Number(status));
    });
    // A reset or a closed pipe after the answer changes nothing; before it, no answer came.
    socket.on("error", () => finish(0));
    socket.on("close", () => finish(0));
    const pump = () => {
      while (!done && written < size) {
        written += piece.length;
        if (!socket.write(framed)) {
          socket.once("drain", pump);
          return;
        }
      }
    };
    socket.write(head);
    pump();
  });
}

/** RSS after a few ordinary requests, so lazily loaded code and first-use buffers are counted. */
async function warmBaseline(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await fetch(`http://127.0.0.1:${port}/settings/catalog?embedded=1`, {
      method: "POST",
      headers: { origin: `http://127.0.0.1:${port}` },
      body: new FormData(),
    }).then((r) => r.arrayBuffer());
  }
  return rssOf(web.pid);
}

describe("an unauthenticated upload to the settings page", { timeout: 120_000 }, () => {
  const embedded = "/settings/catalog?embedded=1";
  it.each([
    [embedded, "multipart", "content-length", 401],
    [embedded, "multipart", "chunked", 401],
    [`${embedded}&shop=victim.myshopify.com&host=YWRtaW4`, "multipart", "chunked", 401],
    // Outside the admin (no cookie): the same, from the headers.
    ["/settings/catalog", "multipart", "chunked", 401],
    // The sign-in reads url-encoded forms for their id_token: the 8 KB limit comes first.
    [embedded, "application/x-www-form-urlencoded", "content-length", 413],
    [embedded, "application/x-www-form-urlencoded", "chunked", 413],
  ] as const)(
    "answers %s (%s, %s, 1 GB) with %i before the body is sent, growing under 20 MB",
    async (path, type, mode, status) => {
      const baseline = await warmBaseline();
      const outcome = await sendHugeUpload(path, GIB, mode, type, baseline);
      expect(outcome.peakRss - baseline).toBeLessThan(RSS_GROWTH_LIMIT);
      expect(outcome.status).toBe(status);
      // Answered from the headers (or the first 8 KB): the rest sat in socket buffers, unread.
      expect(outcome.written).toBeLessThan(64 * 1024 * 1024);
      // The process keeps serving.
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    },
  );
});

/** Bytes the child has read from files and sockets so far (/proc/<pid>/io `rchar`). */
function bytesReadBy(pid: number): number {
  return Number(/^rchar:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1]);
}

interface Refusal {
  /** The answer's head (status line and headers), as received. */
  head: string;
  /** Body bytes handed to the socket before it closed or failed. */
  written: number;
  /** Bytes the server process read while the request was sent and lingered on. */
  serverRead: number;
}

/**
 * POSTs headers announcing `Content-Length: 50000000` on a raw socket, then writes the body in
 * 64 KB chunks as fast as the socket takes them, past the answer, up to 48 MB: an attacker who
 * ignores the refusal and the server's FIN (a half-open socket). Resolves once the connection
 * closes or fails, with what the server process read meanwhile.
 */
function sendPastRefusal(path: string, headers: Record<string, string>): Promise<Refusal> {
  const pid = web.pid;
  const head = [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    `Origin: http://127.0.0.1:${port}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    "Content-Length: 50000000",
    "",
    "",
  ].join("\r\n");
  const piece = Buffer.alloc(64 * 1024, "x");
  const limit = 48 * MIB;
  const before = bytesReadBy(pid);
  return new Promise((resolve) => {
    let written = 0;
    let received = "";
    let closed = false;
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    socket.on("data", (data: Buffer) => {
      received += data.toString("latin1");
    });
    const finish = () => {
      if (closed) return;
      closed = true;
      socket.destroy();
      const end = received.indexOf("\r\n\r\n");
      resolve({
        head: end === -1 ? received : received.slice(0, end),
        written,
        serverRead: bytesReadBy(pid) - before,
      });
    };
    // The server's FIN does not stop this sender: only a reset or a closed pipe does.
    socket.on("error", finish);
    socket.on("close", finish);
    const pump = () => {
      while (!closed && written < limit) {
        written += piece.length;
        if (!socket.write(piece)) {
          socket.once("drain", pump);
          return;
        }
      }
      // All sent and still open: the sender gives up, and the server closes.
      if (!closed) socket.end();
    };
    socket.write(head);
    pump();
  });
}

/** The answers to `requests` sent one after another on one raw keep-alive socket. */
async function onOneConnection(requests: string[]): Promise<{ heads: string[]; open: boolean }> {
  const socket = connect(port, "127.0.0.1");
  let open = true;
  socket.on("close", () => {
    open = false;
  });
  socket.on("error", () => {});
  let received = Buffer.alloc(0);
  const heads: string[] = [];
  try {
    for (const request of requests) {
      socket.write(request);
      const head = await new Promise<string>((resolve, reject) => {
        const parse = () => {
          const end = received.indexOf("\r\n\r\n");
          if (end === -1) return;
          const text = received.subarray(0, end).toString("latin1");
          const length = Number(/^content-length:\s*(\d+)/im.exec(text)?.[1] ?? 0);
          if (received.length < end + 4 + length) return;
          received = received.subarray(end + 4 + length);
          socket.off("data", onData);
          socket.off("close", onClose);
          resolve(text);
        };
        const onData = (data: Buffer) => {
          received = Buffer.concat([received, data]);
          parse();
        };
        const onClose = () => reject(new Error(`connection closed after ${heads.length} answers`));
        socket.on("data", onData);
        socket.once("close", onClose);
        parse();
      });
      heads.push(head);
    }
    return { heads, open };
  } finally {
    socket.destroy();
  }
}

/** A raw webhook request, signed with the app's secret (or with a wrong one). */
function webhookRequest(secret: string): string {
  const body = JSON.stringify({ id: 1 });
  const hmac = createHmac("sha256", secret).update(body).digest("base64");
  return [
    "POST /webhooks/shopify HTTP/1.1",
    `Host: 127.0.0.1:${port}`,
    "Content-Type: application/json",
    `X-Shopify-Topic: orders/create`,
    `X-Shopify-Hmac-Sha256: ${hmac}`,
    "X-Shopify-Shop-Domain: not-installed.myshopify.com",
    "X-Shopify-Api-Version: 2026-10",
    `X-Shopify-Webhook-Id: ${randomUUID()}`,
    `X-Shopify-Triggered-At: ${new Date().toISOString()}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

/**
 * The house rule, "nothing reads a request body beyond its limit before it knows who is asking",
 * also after the answer: a refusal sent before the body was read closes the connection with a
 * lingering close (src/lib/lingering-close.ts), and requests whose body was read keep theirs.
 */
describe("a refused request whose body is still coming", { timeout: 60_000 }, () => {
  const badlySigned = {
    "Content-Type": "application/json",
    "X-Shopify-Topic": "orders/create",
    "X-Shopify-Hmac-Sha256": createHmac("sha256", "not-the-secret").update("{}").digest("base64"),
    "X-Shopify-Shop-Domain": "victim.myshopify.com",
    "X-Shopify-Api-Version": "2026-10",
    "X-Shopify-Webhook-Id": "refused-body",
  };
  it.each([
    // No session: refused from the headers.
    ["/settings/catalog?embedded=1", { "Content-Type": "multipart/form-data; boundary=x" }, 401],
    // A badly signed webhook larger than WEBHOOK_MAX_BYTES: refused from its Content-Length.
    ["/webhooks/shopify", badlySigned, 413],
    ["/webhooks/provider", { "Content-Type": "application/json" }, 413],
    // The 8 KB limit of every other body.
    ["/settings/catalog?embedded=1", { "Content-Type": "application/x-www-form-urlencoded" }, 413],
  ] as const)(
    "answers %s %o with %i and Connection: close, then stops reading within 16 MB",
    async (path, headers, status) => {
      const outcome = await sendPastRefusal(path, headers);
      expect(outcome.head).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      // Node's server would read and discard the rest of the body to reuse the connection (all
      // 48 MB here): the lingering close stops reading after 1 MB, and resets it after 2 s.
      expect(outcome.serverRead).toBeLessThan(16 * MIB);
      // Cut off (reset) before the sender was through, not left to send it all.
      expect(outcome.written).toBeLessThan(48 * MIB);
      // The answer told the client the connection ends.
      expect(outcome.head).toMatch(/^connection: close$/im);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    },
  );

  it("keeps a connection open across requests whose bodies were read, refused or not", async () => {
    const { heads, open } = await onOneConnection([
      webhookRequest(SHOPIFY_API_SECRET),
      webhookRequest("not-the-secret"),
      webhookRequest(SHOPIFY_API_SECRET),
    ]);
    expect(heads.map((head) => head.split(" ")[1])).toEqual(["200", "401", "200"]);
    for (const head of heads) expect(head).not.toMatch(/^connection: close$/im);
    expect(open).toBe(true);
  });
});
