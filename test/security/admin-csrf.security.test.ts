import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSweepWorker } from "../../src/jobs/sweep-worker.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

/**
 * Issue 31, weakness 1: the admin JSON API took a `text/plain` POST from a foreign Origin with
 * the session cookie (`POST /admin/api/dead-letters/retry` answered 200 with
 * `Origin: https://evil.example`), relying on SameSite=Strict alone. Writes now refuse a foreign
 * Origin or Sec-Fetch-Site (403 `cross_origin`) and the API takes JSON only (415). (The bulk
 * retry now answers 202 and runs as a job: see test/server/admin/bulk-retry-job.test.ts.)
 */
const TOKEN = "admin-token-for-tests-0123456789";
const ORDER = "7000001";
let p: Pipeline;
let cookie: string;
let appOrigin: string;

beforeAll(async () => {
  p = await startPipeline({ env: { ADMIN_TOKEN: TOKEN }, workers: 0 });
  appOrigin = new URL(p.ctx.config.appUrl).origin;
  await p.ctx.snapshots.storeOrder(
    sourceOrder({ shop: TEST_SHOP as ShopDomain, id: ORDER as ShopifyOrderId }),
  );
  const now = new Date().toISOString();
  await p.ctx.queues.addDeadLetter(deadLetterId(TEST_SHOP, ORDER), {
    shop: TEST_SHOP,
    orderId: ORDER,
    topic: "orders/create",
    reason: "config failure",
    category: "config",
    errorClass: "ConfigurationError",
    attempts: 1,
    firstFailedAt: now,
    lastFailedAt: now,
  });
  const login = await p.web.app.request("/admin/login", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: appOrigin },
    body: new URLSearchParams({ token: TOKEN, next: "/admin/queues" }),
  });
  expect(login.status).toBe(303);
  cookie = login.headers.get("set-cookie")?.split(";")[0] ?? "";
}, 60_000);
afterAll(async () => {
  await p.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await p.close();
});

const retryAll = (headers: Record<string, string>, body = JSON.stringify({ all: true })) =>
  p.web.app.request("/admin/api/dead-letters/retry", { method: "POST", headers, body });
const deadLetters = () => p.ctx.queues.deadLetter.count();
const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { code: string; fields: { path: string }[] } }).error;

describe("admin writes from another site", () => {
  it("refuses a text/plain POST from a foreign Origin with the cookie (403), retrying nothing", async () => {
    const res = await retryAll({
      cookie,
      origin: "https://evil.example",
      "content-type": "text/plain",
    });
    expect(res.status).toBe(403);
    const error = await errorOf(res);
    expect(error.code).toBe("cross_origin");
    expect(error.fields.map((f) => f.path)).toEqual(["headers.origin"]);
    expect(await deadLetters()).toBe(1);
  });

  it("refuses Sec-Fetch-Site cross-site or same-site, whatever the type", async () => {
    for (const site of ["cross-site", "same-site"]) {
      const res = await retryAll({
        cookie,
        "sec-fetch-site": site,
        "content-type": "application/json",
      });
      expect(res.status, site).toBe(403);
      expect((await errorOf(res)).fields.map((f) => f.path)).toEqual(["headers.sec-fetch-site"]);
    }
    expect(await deadLetters()).toBe(1);
  });

  it("refuses a login form posted from another site", async () => {
    const res = await p.web.app.request("/admin/login", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: "https://evil.example",
      },
      body: new URLSearchParams({ token: TOKEN }),
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("set-cookie")).toBeNull();
  });

  it("takes JSON only, even from the admin's own origin: text/plain or no type is 415", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
      const res = await retryAll({
        cookie,
        origin: appOrigin,
        "sec-fetch-site": "same-origin",
        ...(type ? { "content-type": type } : {}),
      });
      expect(res.status, String(type)).toBe(415);
      const error = await errorOf(res);
      expect(error.code).toBe("unsupported_media_type");
      expect(error.fields.map((f) => f.path)).toEqual(["headers.content-type"]);
    }
    expect(await deadLetters()).toBe(1);
  });

  it("accepts JSON from the admin's own pages and from a script with the bearer token", async () => {
    const own = await retryAll(
      { cookie, origin: appOrigin, "content-type": "application/json" },
      // A filter that matches no entry: the one dead letter is left for the script's retry.
      JSON.stringify({ shop: TEST_SHOP, reason: "mapping" }),
    );
    expect(own.status).toBe(202);
    const script = await retryAll({
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
    });
    // Accepted: the bulk retry runs on the worker role's maintenance queue.
    expect(script.status).toBe(202);
    const { href } = (await script.json()) as { href: string };
    const maintenance = await startSweepWorker(p.ctx);
    try {
      let view = { finished: false };
      while (!view.finished) {
        const read = await p.web.app.request(href, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        view = (await read.json()) as { finished: boolean };
        if (!view.finished) await new Promise((r) => setTimeout(r, 25));
      }
      // The whole view on a mismatch: a failed job's `error` says why.
      expect(view, JSON.stringify(view)).toMatchObject({
        status: "completed",
        matched: 1,
        retried: 1,
      });
    } finally {
      await maintenance.close();
    }
    expect(await deadLetters()).toBe(0);
  });
});
