import { createHmac, randomUUID } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawExchange } from "../helpers/raw-http.ts";
import { startWebRole, type WebRole } from "../helpers/web-role.ts";

/**
 * A sender that trickles a body, or hangs up in the middle of it, before anything knows who it
 * is. Node's HTTP server waits up to its requestTimeout (5 minutes) for a body, so a webhook
 * body sent but for its last byte held its megabyte for 5.5 minutes: 300 such connections took
 * a web process from 190 MB to 490 MB, unauthenticated. A body must now be whole within
 * REQUEST_BODY_TIMEOUT_MS (1 s here) or is answered 408. A client that hangs up mid-body was an
 * "unhandled error" line each, and a wrong token for the admin login's throttle.
 */
const SHOPIFY_API_SECRET = "slow-bodies-secret";
const ADMIN_TOKEN = "slow-bodies-admin-token";
const BODY_TIMEOUT_MS = 1_000;

let web: WebRole;
let port: number;

beforeAll(async () => {
  web = await startWebRole({
    SHOPIFY_API_SECRET,
    ADMIN_TOKEN,
    REQUEST_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
  });
  port = web.port;
}, 60_000);

afterAll(async () => {
  await web?.stop();
});

const sign = (body: Buffer) =>
  createHmac("sha256", SHOPIFY_API_SECRET).update(body).digest("base64");

/** The head of a POST announcing `length` body bytes (or a chunked body when null). */
function head(path: string, type: string, length: number | null, extra: string[] = []): string {
  return [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    `Origin: http://127.0.0.1:${port}`,
    `Content-Type: ${type}`,
    length === null ? "Transfer-Encoding: chunked" : `Content-Length: ${length}`,
    ...extra,
    "",
    "",
  ].join("\r\n");
}

const chunk = (data: string | Buffer) =>
  Buffer.concat([
    Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n`),
    Buffer.from(data),
    Buffer.from("\r\n"),
  ]);

/** A sender on a raw socket: `first`, then `next()` every 100 ms (test/helpers/raw-http.ts). */
const trickle = (first: string | Buffer, next: () => string | Buffer, untilAnswer = false) =>
  rawExchange(port, first, next, untilAnswer);

describe("a body that trickles in", { timeout: 60_000 }, () => {
  const webhook = [
    "X-Shopify-Hmac-Sha256: c2lnbmF0dXJlLW9mLXRoZS13aG9sZS1ib2R5LTMyYnl0ZXM=",
    "X-Shopify-Topic: orders/create",
    "X-Shopify-Shop-Domain: victim.myshopify.com",
  ];
  it.each([
    ["/webhooks/shopify", "application/json", 1_000_000, webhook],
    ["/webhooks/shopify", "application/json", null, webhook],
    ["/webhooks/provider", "application/json", 1_000_000, ["X-Webhook-Signature: sha256=00"]],
    ["/admin/login", "application/x-www-form-urlencoded", 8_000, []],
    ["/settings/provider", "application/x-www-form-urlencoded", null, []],
  ] as const)(
    "POST %s (%s, length %s) is answered 408 once REQUEST_BODY_TIMEOUT_MS has passed, and closed",
    async (path, type, length, extra) => {
      const piece = length === null ? chunk("x") : Buffer.from("x");
      const answer = await trickle(
        Buffer.concat([Buffer.from(head(path, type, length, [...extra])), piece]),
        () => piece,
      );
      expect(answer.status).toBe(408);
      expect(JSON.parse(answer.text)).toEqual({
        error: {
          code: "request_timeout",
          message: `the body did not arrive within ${BODY_TIMEOUT_MS} ms of the headers; send it at once`,
          fields: [{ path: "body", message: `incomplete after ${BODY_TIMEOUT_MS} ms` }],
        },
      });
      // The sender's bytes did not push the deadline back.
      expect(answer.after).toBeGreaterThanOrEqual(BODY_TIMEOUT_MS - 50);
      expect(answer.after).toBeLessThan(BODY_TIMEOUT_MS + 2_000);
      expect(answer.closed).toBe(true);
    },
  );

  it.each(["Content-Length", "chunked"] as const)(
    "still takes a signed webhook that arrives whole in time, slowly (%s)",
    async (framing) => {
      const chunked = framing === "chunked";
      const body = Buffer.from(JSON.stringify({ id: 1, note: "x".repeat(2_000) }));
      const extra = [
        `X-Shopify-Hmac-Sha256: ${sign(body)}`,
        "X-Shopify-Topic: orders/create",
        "X-Shopify-Shop-Domain: not-installed.myshopify.com",
        "X-Shopify-API-Version: 2026-10",
        `X-Shopify-Webhook-Id: ${randomUUID()}`,
      ];
      // Five pieces, 100 ms apart: whole after about 500 ms.
      const size = Math.ceil(body.length / 5);
      const pieces = [0, 1, 2, 3, 4].map((i) => body.subarray(i * size, (i + 1) * size));
      const framed = pieces.map((p) => (chunked ? chunk(p) : p));
      if (chunked) framed.push(Buffer.from("0\r\n\r\n"));
      const first = head(
        "/webhooks/shopify",
        "application/json",
        chunked ? null : body.length,
        extra,
      );
      let sent = 0;
      const answer = await trickle(first, () => framed[sent++] ?? Buffer.alloc(0), true);
      expect(answer.status).toBe(200);
      // Read whole, signature checked and stored (a body of no order is dead-lettered).
      expect(JSON.parse(answer.text)).toEqual({ ok: true, outcome: "dead-lettered" });
    },
  );
});

/** Sends the head and part of a body, then closes the connection; resolves once it is closed. */
function hangUp(path: string, type: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1", () => {
      socket.write(`${head(path, type, 1_000, ["X-Shopify-Hmac-Sha256: AAAA"])}token=abc`);
      setTimeout(() => socket.destroy(), 150);
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve());
  });
}

describe("a client that hangs up in the middle of its body", { timeout: 60_000 }, () => {
  it("is no error in the log and no wrong admin token", async () => {
    const before = web.output().length;
    await hangUp("/webhooks/shopify", "application/json");
    await hangUp("/webhooks/provider", "application/json");
    // More than the login throttle's allowance of wrong tokens (ten in 15 minutes).
    for (let i = 0; i < 11; i++) await hangUp("/admin/login", "application/x-www-form-urlencoded");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = web.output().slice(before);
    expect(lines).not.toContain('"level":"error"');
    expect(lines).not.toContain("unhandled error");
    expect(lines).not.toContain("admin login failed");
    // The address is not blocked: the right token still opens a session.
    const login = await fetch(`http://127.0.0.1:${port}/admin/login`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: ADMIN_TOKEN }),
    });
    expect(login.status).toBe(303);
  });
});
