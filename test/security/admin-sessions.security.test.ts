import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_COOKIE } from "../../src/server/admin/index.ts";
import { type Pipeline, startPipeline } from "../helpers/pipeline.ts";

/**
 * Issue 31, vulnerability 5: the admin cookie was a signed expiry, so `POST /admin/logout` only
 * asked the browser to forget it; the same value, replayed, opened `/admin/api/status` for the
 * rest of its 12 hours. Sessions now live in Redis: logout ends them, and so does a new
 * ADMIN_TOKEN (a restart with another token is a second web app on the same Redis prefix).
 */
const TOKEN = "admin-token-for-tests-0123456789";
const NEW_TOKEN = "rotated-admin-token-9876543210";

const pipelines: Pipeline[] = [];
afterEach(async () => {
  for (const p of pipelines.splice(0)) await p.close();
});

async function start(token: string, prefix: string): Promise<Pipeline> {
  const p = await startPipeline({ env: { ADMIN_TOKEN: token }, prefix, workers: 0 });
  pipelines.push(p);
  return p;
}

/** Logs in with the form and answers the session cookie (`name=value`). */
async function login(p: Pipeline, token: string): Promise<string> {
  const res = await p.web.app.request("/admin/login", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token, next: "/admin/queues" }),
  });
  expect(res.status).toBe(303);
  const cookie = res.headers.getSetCookie().find((l) => l.startsWith(`${ADMIN_COOKIE}=`));
  return cookie?.split(";")[0] ?? "";
}

const status = async (p: Pipeline, cookie: string) =>
  (await p.web.app.request("/admin/api/status", { headers: { cookie } })).status;

describe("admin browser sessions", { timeout: 60_000 }, () => {
  it("end on logout: the old cookie value gets 401 at once", async () => {
    const p = await start(TOKEN, `t-${randomUUID()}`);
    const cookie = await login(p, TOKEN);
    const other = await login(p, TOKEN);
    expect(await status(p, cookie)).toBe(200);

    const out = await p.web.app.request("/admin/logout", { method: "POST", headers: { cookie } });
    expect(out.status).toBe(303);
    expect(await status(p, cookie)).toBe(401);
    // Another browser's session is its own.
    expect(await status(p, other)).toBe(200);
  });

  it("end when ADMIN_TOKEN changes, and survive a restart with the same token", async () => {
    const prefix = `t-${randomUUID()}`;
    const first = await start(TOKEN, prefix);
    const cookie = await login(first, TOKEN);
    expect(await status(first, cookie)).toBe(200);
    await pipelines.pop()?.close();

    const same = await start(TOKEN, prefix);
    expect(await status(same, cookie)).toBe(200);
    await pipelines.pop()?.close();

    const rotated = await start(NEW_TOKEN, prefix);
    expect(await status(rotated, cookie)).toBe(401);
  });

  it("keep no token in the cookie or in Redis, and refuse a guessed session ID", async () => {
    const p = await start(TOKEN, `t-${randomUUID()}`);
    const cookie = await login(p, TOKEN);
    const id = cookie.slice(ADMIN_COOKIE.length + 1);
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const keys = await p.ctx.redis.keys(`${p.ctx.prefix}:admin-session:*`);
    expect(keys).toHaveLength(1);
    const stored = await p.ctx.redis.get(keys[0] ?? "");
    expect(keys[0]).not.toContain(id);
    expect(stored).not.toContain(TOKEN);
    const ttl = await p.ctx.redis.pttl(keys[0] ?? "");
    expect(ttl).toBeGreaterThan(11 * 3600_000);
    expect(ttl).toBeLessThanOrEqual(12 * 3600_000);
    const guessed = `${ADMIN_COOKIE}=${"A".repeat(43)}`;
    expect(await status(p, guessed)).toBe(401);
  });
});
