import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RawAnswer, rawExchange } from "../helpers/raw-http.ts";
import { startWebRole, type WebRole } from "../helpers/web-role.ts";

/**
 * Many bodies arriving at once, before anything knows who sends them. The size limit and the
 * arrival deadline bound one body each, not how many a process holds together: 300 connections
 * each sending all but the last byte of a 1 MB webhook body held 300 MB for
 * REQUEST_BODY_TIMEOUT_MS, unauthenticated. REQUEST_BODIES_MAX_BYTES now bounds them all: a body
 * that would pass it is answered 503 at once, and every body gives its bytes back however it
 * ends. The web role runs as its own process; what it holds is read from its /metrics gauge and
 * its RSS from /proc.
 */
const SHOPIFY_API_SECRET = "body-budget-secret";
const MB = 1_000_000;
const MIB = 1024 * 1024;
/** What a held body of 1 MB holds: all but its last byte (holdBody). */
const HELD_MB = MB - 1;

type Web = WebRole;

const webs: Web[] = [];

async function startWeb(env: Record<string, string>): Promise<Web> {
  const web = await startWebRole({ SHOPIFY_API_SECRET, ...env });
  webs.push(web);
  return web;
}

afterAll(async () => {
  await Promise.all(webs.map((web) => web.stop()));
});

const sign = (body: Buffer) =>
  createHmac("sha256", SHOPIFY_API_SECRET).update(body).digest("base64");

/** The head of a Shopify webhook announcing `length` body bytes (chunked when null). */
function webhookHead(web: Web, length: number | null, signature = "AAAA"): string {
  return [
    "POST /webhooks/shopify HTTP/1.1",
    `Host: 127.0.0.1:${web.port}`,
    "Content-Type: application/json",
    length === null ? "Transfer-Encoding: chunked" : `Content-Length: ${length}`,
    `X-Shopify-Hmac-Sha256: ${signature}`,
    "X-Shopify-Topic: orders/create",
    "X-Shopify-Shop-Domain: not-installed.myshopify.com",
    "X-Shopify-API-Version: 2026-10",
    `X-Shopify-Webhook-Id: ${randomUUID()}`,
    "",
    "",
  ].join("\r\n");
}

const chunk = (data: Buffer) =>
  Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from("\r\n")]);

/** A webhook body that is held: the head and all but the last of `length` bytes, then nothing. */
function holdBody(web: Web, length: number, filler = "x"): Socket {
  const socket = connect(web.port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write(webhookHead(web, length));
  socket.write(Buffer.alloc(length - 1, filler));
  return socket;
}

/** A sender on a raw socket to `web` (test/helpers/raw-http.ts). */
const send = (
  web: Web,
  first: string | Buffer,
  next?: () => Buffer | undefined,
  untilAnswer = false,
): Promise<RawAnswer> => rawExchange(web.port, first, next, untilAnswer);

/** A signed webhook of about `size` bytes, sent whole: its answer. */
function signedWebhook(web: Web, size: number): Promise<RawAnswer> {
  const body = Buffer.from(JSON.stringify({ id: 1, note: "x".repeat(size) }));
  return send(
    web,
    Buffer.concat([Buffer.from(webhookHead(web, body.length, sign(body))), body]),
    undefined,
    true,
  );
}

/** A value of the web process's /metrics (0 when it has none yet). */
async function metric(web: Web, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${web.port}/metrics`)).text();
  const value = new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1];
  return value === undefined ? undefined : Number(value);
}

/** Polls the bytes the process holds of arriving bodies until `expected` (or 15 s pass). */
async function heldBecomes(web: Web, expected: number): Promise<number | undefined> {
  const until = Date.now() + 15_000;
  let held = await metric(web, "connector_request_body_bytes");
  while (held !== expected && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    held = await metric(web, "connector_request_body_bytes");
  }
  return held;
}

const BUSY = {
  error: {
    code: "too_many_bodies",
    message: "too many request bodies are arriving at once; send this one again later",
  },
};

describe("bodies arriving at once, past REQUEST_BODIES_MAX_BYTES", { timeout: 90_000 }, () => {
  let web: Web;
  const holders: Socket[] = [];
  beforeAll(async () => {
    web = await startWeb({
      // Room for two 1 MB bodies and half of a third.
      REQUEST_BODIES_MAX_BYTES: String(2.5 * MB),
      // Long enough that no body held here runs late during the test.
      REQUEST_BODY_TIMEOUT_MS: "60000",
    });
  }, 60_000);
  afterAll(() => {
    for (const socket of holders) socket.destroy();
  });

  it("answers the body that would pass it 503 at once, with Retry-After, and closes", async () => {
    const before = web.output().length;
    holders.push(holdBody(web, MB, "a"), holdBody(web, MB, "b"));
    expect(await heldBecomes(web, 2 * HELD_MB)).toBe(2 * HELD_MB);

    // A third 1 MB body, sent as the others but for a marker that must never be logged.
    const third = await send(
      web,
      Buffer.concat([Buffer.from(webhookHead(web, MB)), Buffer.alloc(MB - 1, "SECRETBODY")]),
    );
    expect(third.status).toBe(503);
    expect(third.headers).toMatch(/^retry-after: 60$/im);
    expect(third.headers).toMatch(/^connection: close$/im);
    expect(JSON.parse(third.text)).toEqual(BUSY);
    expect(third.closed).toBe(true);

    // A chunked body is counted as its chunks arrive: refused once they would pass it.
    const piece = chunk(Buffer.alloc(100_000, "c"));
    const chunked = await send(web, webhookHead(web, null), () => piece);
    expect(chunked.status).toBe(503);
    expect(JSON.parse(chunked.text)).toEqual(BUSY);
    expect(chunked.closed).toBe(true);
    // What the refused chunks had reserved is given back: the two held bodies remain.
    expect(await heldBecomes(web, 2 * HELD_MB)).toBe(2 * HELD_MB);

    // A body that fits beside the held ones is taken, signed and read as ever.
    const small = await signedWebhook(web, 4_000);
    expect(small.status).toBe(200);
    expect(JSON.parse(small.text)).toEqual({ ok: true, outcome: "dead-lettered" });

    // More refusals of the same burst: one warning said it, never with a body.
    for (let i = 0; i < 3; i++) {
      const past = Buffer.concat([Buffer.from(webhookHead(web, MB)), Buffer.alloc(600_000, "m")]);
      expect((await send(web, past)).status).toBe(503);
    }
    expect(await metric(web, "connector_request_bodies_refused_total")).toBe(5);
    const lines = web
      .output()
      .slice(before)
      .split("\n")
      .filter((line) => line.includes("REQUEST_BODIES_MAX_BYTES"));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({
      level: "warn",
      component: "request-bodies",
      maxBytes: 2.5 * MB,
    });
    // What was held when the third body's bytes passed it: the two, and what of it had arrived.
    expect(JSON.parse(lines[0] ?? "{}").bytesHeld).toBeGreaterThanOrEqual(2 * HELD_MB);
    expect(web.output()).not.toContain("SECRETBODY");
    expect(web.output()).not.toContain("ccccc");
  });

  it("counts the bytes that arrived, not those announced: idle connections hold nothing", async () => {
    // Ten connections announce 1 MB each and send nothing: by their Content-Length they would
    // fill the budget four times over and keep every webhook out.
    const before = await metric(web, "connector_request_body_bytes");
    const idle = Array.from({ length: 10 }, () => {
      const socket = connect(web.port, "127.0.0.1");
      socket.on("error", () => {});
      socket.write(webhookHead(web, MB));
      return socket;
    });
    try {
      const small = await signedWebhook(web, 4_000);
      expect(small.status).toBe(200);
      expect(await heldBecomes(web, before ?? 0)).toBe(before ?? 0);
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });

  it("gives the bytes back when a held body is cut off, and takes a 1 MB webhook again", async () => {
    for (const socket of holders.splice(0)) socket.destroy();
    expect(await heldBecomes(web, 0)).toBe(0);
    const whole = await signedWebhook(web, MB - 100);
    expect(whole.status).toBe(200);
    expect(JSON.parse(whole.text)).toEqual({ ok: true, outcome: "dead-lettered" });
    // Read, refused (401 after the read, 413 chunked), cut off: nothing stays held.
    const unsigned = await send(
      web,
      Buffer.concat([Buffer.from(webhookHead(web, 2_000)), Buffer.alloc(2_000, "u")]),
      undefined,
      true,
    );
    expect(unsigned.status).toBe(401);
    const piece = chunk(Buffer.alloc(400_000, "t"));
    const tooLarge = await send(web, webhookHead(web, null), () => piece);
    expect(tooLarge.status).toBe(413);
    expect(await heldBecomes(web, 0)).toBe(0);
  });
});

describe("a body that runs late", { timeout: 60_000 }, () => {
  it("gives its bytes back when it is answered 408", async () => {
    const web = await startWeb({
      REQUEST_BODIES_MAX_BYTES: String(1.5 * MB),
      REQUEST_BODY_TIMEOUT_MS: "1000",
    });
    const late = await send(web, `${webhookHead(web, MB)}x`, () => Buffer.from("x"));
    expect(late.status).toBe(408);
    expect(await heldBecomes(web, 0)).toBe(0);
    // The budget (room for one 1 MB body) is whole again.
    expect((await signedWebhook(web, MB - 100)).status).toBe(200);
    await web.stop();
  });
});

describe("the default budget", { timeout: 120_000 }, () => {
  let web: Web;
  beforeAll(async () => {
    web = await startWeb({ REQUEST_BODY_TIMEOUT_MS: "60000" });
  }, 60_000);

  it("takes 64 signed 4 KB webhooks at once, refusing none", async () => {
    const answers = await Promise.all(Array.from({ length: 64 }, () => signedWebhook(web, 4_000)));
    expect(answers.map((a) => a.status)).toEqual(Array(64).fill(200));
    expect(await metric(web, "connector_request_bodies_refused_total")).toBe(0);
  });

  it("keeps 300 held 1 MB webhook bodies from raising the process past it", async () => {
    const rss = () =>
      Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${web.pid}/status`, "utf8"))?.[1]) *
      1024;
    const baseline = rss();
    const sockets = Array.from({ length: 300 }, () => holdBody(web, MB));
    const answered = new Set<Socket>();
    for (const socket of sockets) socket.once("data", () => answered.add(socket));
    // Until every body is either held whole but for its last byte or answered (15 s at most).
    const until = Date.now() + 15_000;
    let peak = 0;
    let held: number | undefined;
    for (;;) {
      peak = Math.max(peak, rss());
      held = await metric(web, "connector_request_body_bytes");
      const sent = sockets.every((s) => answered.has(s) || s.writableLength === 0);
      if ((sent && answered.size + (held ?? 0) / HELD_MB === 300) || Date.now() > until) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    peak = Math.max(peak, rss());
    for (const socket of sockets) socket.destroy();
    console.log(
      `300 held 1 MB bodies: RSS ${Math.round(baseline / MIB)} MiB -> peak ${Math.round(peak / MIB)} MiB; ${answered.size} answered 503, ${held} bytes held`,
    );
    // Each body is held whole but for its last byte, or answered 503 once its bytes would pass
    // the budget (32 MiB: at most 33 such bodies; fewer when refusals came while others' first
    // chunks were counted).
    expect((held ?? 0) % HELD_MB).toBe(0);
    expect(held).toBeLessThanOrEqual(32 * MIB);
    expect(held).toBeGreaterThan(16 * MIB);
    expect(answered.size + (held ?? 0) / HELD_MB).toBe(300);
    // Before: every body held, 300 MB that no collection frees (134 → 468 MiB measured). Now
    // what is held (33 MB), and what the refused connections' lingering close read and dropped
    // before a collection freed it (+89 to +149 MiB measured). The RSS is printed, not asserted:
    // how much dropped garbage it still shows depends on when V8 collects, not on the code.
    expect(await heldBecomes(web, 0)).toBe(0);
  });
});
