import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { service } from "../helpers/services.ts";

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
const RSS_GROWTH_LIMIT = 20 * 1024 * 1024;

let child: ChildProcess;
let port: number;
let dir: string;
let exited: Promise<number | null>;
let output = "";

/** The child's resident set size in bytes (VmRSS). */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) * 1024;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "preauth-memory-"));
  port = await freePort();
  child = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "--role", "web"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PORT: String(port),
      APP_URL: `http://127.0.0.1:${port}`,
      REDIS_URL: service("redisUrl"),
      REDIS_PREFIX: `t-${randomUUID()}`,
      DATABASE_PATH: join(dir, "connector.sqlite"),
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      PROVIDER_AUTH_URL: "http://127.0.0.1:9",
      PROVIDER_AUDIENCE: "none",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const seen = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"web process listening"')) resolve();
    };
    child.stdout?.on("data", seen);
    child.stderr?.on("data", seen);
    void exited.then((code) => reject(new Error(`web role exited (${code}): ${output}`)));
  });
}, 60_000);

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
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
  const pid = child.pid ?? 0;
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
  return rssOf(child.pid ?? 0);
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
