import { request } from "node:http";
import { Hono } from "hono";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_FAILURES_ALLOWED, LoginGuard } from "../../src/server/admin/login-guard.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { type InstallHarness, startInstallHarness } from "../helpers/install-harness.ts";

/**
 * ADMIN_TOKEN could be guessed at any speed, and nothing was logged. Each wrong token now counts
 * against the client's address across every web process; past the allowance the address gets 429
 * with Retry-After, even with the right token, while other addresses are unaffected.
 */
const ADMIN_TOKEN = "the-real-admin-token-0123";
const logs = captureLogs("admin-throttle");
let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness({
    env: { ADMIN_TOKEN, LOG_LEVEL: "info" },
    logDestination: logs.destination,
  });
});
afterAll(async () => {
  await h.close();
  logs.remove();
});

/** POST /admin/login from a given loopback address (127.0.0.0/8 all reach the server). */
function login(token: string, from: string) {
  const url = new URL("/admin/login", h.appUrl);
  const body = new URLSearchParams({ token, next: "/admin/queues" }).toString();
  return new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        localAddress: from,
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "content-length": String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"] as string });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("admin login throttling", () => {
  it("refuses a guessing address with 429 after the allowance, and logs each failure", async () => {
    for (let i = 1; i <= LOGIN_FAILURES_ALLOWED; i++) {
      expect((await login(`guess-${i}`, "127.0.0.2")).status).toBe(401);
    }
    const last = await login("guess-last", "127.0.0.2");
    expect(last.status).toBe(429);
    expect(Number(last.retryAfter)).toBeGreaterThan(60);
    // Blocked: even the right token is refused from that address for now.
    expect((await login(ADMIN_TOKEN, "127.0.0.2")).status).toBe(429);
    // Another address is not affected.
    expect((await login(ADMIN_TOKEN, "127.0.0.3")).status).toBe(303);

    const warnings = logs
      .read()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === "admin login failed: wrong token");
    expect(warnings).toHaveLength(LOGIN_FAILURES_ALLOWED + 1);
    expect(warnings.at(-1)?.blockedForSeconds).toBeGreaterThan(60);
    expect(warnings[0]).toMatchObject({
      level: "warn",
      client: "127.0.0.2",
      how: "login form",
      attempts: 1,
    });
    expect(logs.read()).not.toContain("guess-");
  });

  it("counts wrong bearer tokens on the API the same way", async () => {
    const api = (token: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          new URL("/admin/api/dead-letters", h.appUrl),
          { localAddress: "127.0.0.4", headers: { authorization: `Bearer ${token}` } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end();
      });
    const statuses: number[] = [];
    for (let i = 0; i < LOGIN_FAILURES_ALLOWED + 1; i++) statuses.push(await api(`wrong-${i}`));
    expect(statuses.slice(0, LOGIN_FAILURES_ALLOWED).every((s) => s === 401)).toBe(true);
    expect(statuses.at(-1)).toBe(429);
  });
});

/**
 * Issue 31, weakness 2: with TRUST_PROXY the client's address was the first X-Forwarded-For
 * entry, which the client writes itself behind a proxy that appends: a guesser sending a new
 * forged entry each time was never throttled. The address is now the entry the trusted proxy
 * added, counted from the right (TRUST_PROXY = the number of proxies; true is one).
 */
describe("admin login throttling behind a proxy (TRUST_PROXY)", () => {
  let proxied: InstallHarness;
  beforeAll(async () => {
    proxied = await startInstallHarness({ env: { ADMIN_TOKEN, TRUST_PROXY: "true" } });
  });
  afterAll(() => proxied.close());

  /** A login as it arrives through a proxy that appends the address it saw. */
  const viaProxy = async (token: string, forged: string, seenByProxy: string) =>
    (
      await fetch(new URL("/admin/login", proxied.appUrl), {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-forwarded-for": `${forged}, ${seenByProxy}`,
        },
        body: new URLSearchParams({ token, next: "/admin/queues" }),
      })
    ).status;

  it("throttles the address the proxy saw, whatever the client writes to the left of it", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= LOGIN_FAILURES_ALLOWED; i++) {
      statuses.push(await viaProxy(`guess-${i}`, `198.51.100.${i + 1}`, "203.0.113.7"));
    }
    expect(statuses.slice(0, LOGIN_FAILURES_ALLOWED)).toEqual(
      Array(LOGIN_FAILURES_ALLOWED).fill(401),
    );
    expect(statuses.at(-1)).toBe(429);
    expect(await viaProxy(ADMIN_TOKEN, "198.51.100.200", "203.0.113.7")).toBe(429);
    // The operator behind another address, even one the guesser names, still gets in.
    expect(await viaProxy(ADMIN_TOKEN, "203.0.113.7", "203.0.113.8")).toBe(303);
  });

  it("counts TRUST_PROXY hops from the right, and ignores an entry that is not an address", async () => {
    const clientOf = async (hops: number, forwarded: string) => {
      const guard = new LoginGuard({
        redis: proxied.ctx.redis,
        prefix: proxied.ctx.prefix,
        logger: pino({ level: "silent" }),
        proxyHops: hops,
      });
      const app = new Hono().get("/", (c) => c.text(guard.client(c)));
      return (await app.request("/", { headers: { "x-forwarded-for": forwarded } })).text();
    };
    const chain = "198.51.100.1, 203.0.113.7, 10.0.0.2";
    expect(await clientOf(1, chain)).toBe("10.0.0.2");
    expect(await clientOf(2, chain)).toBe("203.0.113.7");
    expect(await clientOf(3, chain)).toBe("198.51.100.1");
    // Fewer entries than proxies: the leftmost there is.
    expect(await clientOf(5, chain)).toBe("198.51.100.1");
    // No proxy trusted, or garbage where the address should be: the socket's (none in-process).
    expect(await clientOf(0, chain)).toBe("unknown");
    expect(await clientOf(1, "198.51.100.1, not-an-ip")).toBe("unknown");
  });
});
