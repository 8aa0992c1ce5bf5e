import { afterEach, describe, expect, it } from "vitest";
import { startSweepWorker } from "../../../src/jobs/sweep-worker.ts";
import { BulkRetryQueue } from "../../../src/ops/bulk-retry.ts";
import type { DeadLetterData, FailureCategory } from "../../../src/queue/jobs.ts";
import { deadLetterId } from "../../../src/queue/order-queues.ts";
import type { ShopDomain, ShopifyOrderId } from "../../../src/sync/source-order.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";
import { startShopBackgroundWork } from "../../helpers/shop-background-work.ts";
import { sourceOrder } from "../../helpers/source-order-factory.ts";

const TOKEN = "admin-token-for-tests-0123456789";
const OTHER_SHOP = "other-shop.myshopify.com";
/** A script's request: the bearer token, and JSON (the only type the admin API takes). */
const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
});

async function seeded() {
  const p = await startPipeline({ env: { ADMIN_TOKEN: TOKEN }, workers: 0 });
  await p.ctx.shops.upsertShop(OTHER_SHOP, { storeId: 1001, storeCurrency: "USD" });
  const add = async (shop: string, orderId: string, category: FailureCategory) => {
    await p.ctx.snapshots.storeOrder(
      sourceOrder({ shop: shop as ShopDomain, id: orderId as ShopifyOrderId }),
    );
    const now = new Date().toISOString();
    const data: DeadLetterData = {
      shop,
      orderId,
      topic: "orders/create",
      reason: `${category} failure`,
      category,
      errorClass: "ProviderValidationError",
      request: { method: "POST", path: "/orders", body: { customer: { email: "a@b.example" } } },
      response: { status: 400, body: { error: { code: "validation_error" } } },
      attempts: 1,
      firstFailedAt: now,
      lastFailedAt: now,
    };
    await p.ctx.queues.addDeadLetter(deadLetterId(shop, orderId), data);
  };
  await add(TEST_SHOP, "6000001", "provider-validation");
  await add(TEST_SHOP, "6000002", "config");
  await add(OTHER_SHOP, "6000003", "provider-validation");
  return p;
}

const call = (path: string, init: RequestInit = {}) => {
  if (!pipeline) throw new Error("no pipeline");
  return pipeline.web.app.request(path, {
    ...init,
    headers: { ...auth, ...(init.headers as Record<string, string> | undefined) },
  });
};

describe("/admin/api/dead-letters", () => {
  it("lists entries filtered by shop and reason, without request or response bodies", async () => {
    pipeline = await seeded();
    const all = (await (await call("/admin/api/dead-letters")).json()) as {
      total: number;
      entries: Record<string, unknown>[];
    };
    expect(all.total).toBe(3);
    expect(all.entries[0]).not.toHaveProperty("request");
    expect(all.entries[0]).toHaveProperty("status", 400);

    const filtered = await call(
      `/admin/api/dead-letters?shop=${TEST_SHOP}&reason=provider-validation`,
    );
    const body = (await filtered.json()) as { total: number; entries: { id: string }[] };
    expect(body.total).toBe(1);
    expect(body.entries[0]?.id).toBe(deadLetterId(TEST_SHOP, "6000001"));

    const paged = (await (await call("/admin/api/dead-letters?limit=2&offset=2")).json()) as {
      entries: unknown[];
    };
    expect(paged.entries).toHaveLength(1);

    // By text in the reason (case-sensitive), alone or with the other filters.
    const byText = (await (
      await call("/admin/api/dead-letters?reasonIncludes=config%20fail")
    ).json()) as { total: number; entries: { id: string }[] };
    expect(byText.entries.map((e) => e.id)).toEqual([deadLetterId(TEST_SHOP, "6000002")]);
    const both = (await (
      await call(`/admin/api/dead-letters?shop=${OTHER_SHOP}&reasonIncludes=validation%20failure`)
    ).json()) as { total: number; entries: { id: string }[] };
    expect(both.entries.map((e) => e.id)).toEqual([deadLetterId(OTHER_SHOP, "6000003")]);
    const other = (await (await call("/admin/api/dead-letters?reasonIncludes=Config")).json()) as {
      total: number;
    };
    expect(other.total).toBe(0);
  });

  it("reads a shop in the path or a filter in any case, as a host name", async () => {
    pipeline = await seeded();
    const shouted = TEST_SHOP.toUpperCase();
    const filtered = await call(`/admin/api/dead-letters?shop=${shouted}`);
    expect(filtered.status).toBe(200);
    const body = (await filtered.json()) as { total: number; entries: { shop: string }[] };
    expect(body.total).toBe(2);
    expect(new Set(body.entries.map((e) => e.shop))).toEqual(new Set([TEST_SHOP]));
    const counts = await call(`/admin/api/dead-letters/counts?shop=%20${shouted}`);
    expect(counts.status).toBe(200);
    const status = await call(`/admin/api/status?shop=${shouted}`);
    expect(status.status).toBe(200);
    // The shop is found: it has no backfill yet, which is what a lower-case path answers too.
    const backfill = await call(`/admin/api/shops/${shouted}/backfill`);
    expect(backfill.status).toBe(404);
    expect(await backfill.json()).toEqual({
      error: { code: "not_found", message: "this shop has no backfill yet" },
    });
  });

  it("answers 400 naming the field for a bad filter", async () => {
    pipeline = await seeded();
    const response = await call("/admin/api/dead-letters?shop=not-a-shop&limit=0");
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { fields: { path: string }[] } };
    expect(body.error.fields.map((f) => f.path)).toContain("shop");
    // A misspelt category is refused, not answered with an empty list.
    const misspelt = await call("/admin/api/dead-letters?reason=provider-valdation");
    expect(misspelt.status).toBe(400);
    const refused = (await misspelt.json()) as {
      error: { fields: { path: string; message: string }[] };
    };
    expect(refused.error.fields).toEqual([
      {
        path: "reason",
        message:
          "must be one of config, mapping, protected-data, provider-validation, provider-not-found, provider-conflict, link-mismatch, exhausted, payload",
      },
    ]);
    // A misspelt filter is refused, not ignored: it would list every entry.
    const typo = await call(`/admin/api/dead-letters?shop=${TEST_SHOP}&reason_includes=config`);
    expect(typo.status).toBe(400);
    expect(((await typo.json()) as { error: { fields: unknown[] } }).error.fields).toEqual([
      { path: "reason_includes", message: "unknown field" },
    ]);
    const blank = await call("/admin/api/dead-letters?reasonIncludes=%20%20");
    expect(blank.status).toBe(400);
    expect(((await blank.json()) as { error: { fields: unknown[] } }).error.fields).toEqual([
      { path: "reasonIncludes", message: "must not be empty" },
    ]);
  });

  it("answers 400 for a parameter given twice and a page that is not digits", async () => {
    pipeline = await seeded();
    const fieldsOf = async (response: Response) => {
      expect(response.status, response.url).toBe(400);
      return ((await response.json()) as { error: { fields: unknown[] } }).error.fields;
    };
    // Before: the first value answered, the second dropped: TEST_SHOP's entries alone, 200.
    for (const path of [
      `/admin/api/dead-letters?shop=${TEST_SHOP}&shop=${OTHER_SHOP}`,
      `/admin/api/dead-letters/counts?shop=${TEST_SHOP}&shop=${OTHER_SHOP}`,
      `/admin/api/status?shop=${TEST_SHOP}&shop=${OTHER_SHOP}`,
    ]) {
      expect(await fieldsOf(await call(path))).toEqual([
        { path: "shop", message: "given more than once: give it once" },
      ]);
    }
    // Before: `offset=` was 0, `1e1` 10 and `0x2` 2, all answered 200.
    for (const [query, field] of [
      ["offset=", { path: "offset", message: "must be a whole number, at least 0" }],
      ["limit=1e1", { path: "limit", message: "must be a whole number from 1 to 500" }],
      ["limit=0x2", { path: "limit", message: "must be a whole number from 1 to 500" }],
      ["limit=501", { path: "limit", message: "must be a whole number from 1 to 500" }],
      ["limit=2&limit=3", { path: "limit", message: "given more than once: give it once" }],
    ] as const) {
      expect(await fieldsOf(await call(`/admin/api/dead-letters?${query}`)), query).toEqual([
        field,
      ]);
    }
    const page = (await (await call("/admin/api/dead-letters?limit=1&offset=2")).json()) as {
      limit: number;
      offset: number;
      entries: unknown[];
    };
    expect(page).toMatchObject({ limit: 1, offset: 2 });
    expect(page.entries).toHaveLength(1);
  });

  it("answers 404 naming shop for a shop it has no record of, as resync does", async () => {
    pipeline = await seeded();
    const unknown = "never-installed.myshopify.com";
    const expected = {
      error: {
        code: "not_found",
        message: `shop ${unknown} is not registered`,
        fields: [
          {
            path: "shop",
            message: "not registered: `connector shops list` shows the shops the connector has",
          },
        ],
      },
    };
    // Before: 200 with an empty list, zero counts, a report of no shops, and a bulk retry
    // queued that matched nothing: a mistyped shop read as a shop with nothing wrong.
    for (const response of [
      await call(`/admin/api/dead-letters?shop=${unknown}`),
      await call(`/admin/api/dead-letters/counts?shop=${unknown}`),
      await call(`/admin/api/status?shop=${unknown}`),
      await call("/admin/api/dead-letters/retry", {
        method: "POST",
        body: JSON.stringify({ shop: unknown }),
      }),
      await call(`/admin/api/shops/${unknown}/resync`, {
        method: "POST",
        body: JSON.stringify({ all: true }),
      }),
    ]) {
      expect(response.status, response.url).toBe(404);
      expect(await response.json()).toEqual(expected);
    }
    const maintenance = new BulkRetryQueue(pipeline.ctx.redis, pipeline.ctx.prefix);
    expect(await maintenance.queue.count()).toBe(0);
    await maintenance.close();
    // A shop it knows is answered as before.
    expect((await call(`/admin/api/dead-letters/counts?shop=${OTHER_SHOP}`)).status).toBe(200);
  });

  it("shows one entry in full and 404s an unknown one", async () => {
    pipeline = await seeded();
    const id = encodeURIComponent(deadLetterId(TEST_SHOP, "6000001"));
    const entry = (await (await call(`/admin/api/dead-letters/${id}`)).json()) as DeadLetterData;
    expect(entry.request?.body).toEqual({ customer: { email: "a@b.example" } });
    expect(entry.response?.status).toBe(400);
    expect((await call("/admin/api/dead-letters/nope%7C1")).status).toBe(404);
  });

  it("retries one entry, then answers 404 for the same entry", async () => {
    pipeline = await seeded();
    const id = encodeURIComponent(deadLetterId(TEST_SHOP, "6000001"));
    const first = await call(`/admin/api/dead-letters/${id}/retry`, { method: "POST" });
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ result: "queued" });
    const queued = await pipeline.ctx.queues.sync.getJobs(["prioritized", "waiting"]);
    expect(queued.map((j) => [j.data.orderId, j.data.trigger])).toEqual([["6000001", "dlq-retry"]]);
    const second = await call(`/admin/api/dead-letters/${id}/retry`, { method: "POST" });
    expect(second.status).toBe(404);
  });

  it("bulk-retries only the matching entries and requires a filter or all", async () => {
    pipeline = await seeded();
    const empty = await call("/admin/api/dead-letters/retry", { method: "POST" });
    expect(empty.status).toBe(400);
    expect(((await empty.json()) as { error: { code: string } }).error.code).toBe(
      "filter_required",
    );

    const broken = await call("/admin/api/dead-letters/retry", { method: "POST", body: "{shop" });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
    const badReason = await call("/admin/api/dead-letters/retry", {
      method: "POST",
      body: JSON.stringify({ reason: "Provider Validation!" }),
    });
    expect(badReason.status).toBe(400);
    // A misspelt filter would widen the retry to every entry of the shop: refused, nothing
    // retried (the entries are still listed below).
    const typo = await call("/admin/api/dead-letters/retry", {
      method: "POST",
      body: JSON.stringify({ shop: TEST_SHOP, reason_includes: "config failure" }),
    });
    expect(typo.status).toBe(400);
    expect(await typo.json()).toEqual({
      error: {
        code: "invalid_request",
        message: "the request has invalid fields",
        fields: [{ path: "reason_includes", message: "unknown field" }],
      },
    });

    const response = await call("/admin/api/dead-letters/retry", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "provider-validation" }),
    });
    // It runs on the worker role's maintenance queue; the answer says where to follow it.
    expect(response.status).toBe(202);
    const { href } = (await response.json()) as { href: string };
    const maintenance = await startSweepWorker(pipeline.ctx);
    try {
      let view: { finished: boolean } = { finished: false };
      while (!view.finished) {
        view = (await (await call(href)).json()) as { finished: boolean };
        if (!view.finished) await new Promise((r) => setTimeout(r, 25));
      }
      expect(view).toMatchObject({ status: "completed", matched: 2, retried: 2, skipped: 0 });
    } finally {
      await maintenance.close();
    }
    const left = (await (await call("/admin/api/dead-letters")).json()) as {
      entries: { id: string }[];
    };
    expect(left.entries.map((e) => e.id)).toEqual([deadLetterId(TEST_SHOP, "6000002")]);
  });

  it("bulk-retries the entries whose reason contains a text, a filter on its own", async () => {
    pipeline = await seeded();
    const response = await call("/admin/api/dead-letters/retry", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reasonIncludes: "config failure" }),
    });
    expect(response.status).toBe(202);
    const started = (await response.json()) as { href: string; filter: unknown };
    expect(started.filter).toEqual({ reasonIncludes: "config failure" });
    // Not the same job as a retry of every entry: another filter, another job.
    const everything = await call("/admin/api/dead-letters/retry", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ all: true }),
    });
    expect(((await everything.json()) as { href: string }).href).not.toBe(started.href);
    const maintenance = await startSweepWorker(pipeline.ctx);
    try {
      await expect
        .poll(async () => ((await (await call(started.href)).json()) as { status: string }).status)
        .toBe("completed");
      expect(await (await call(started.href)).json()).toMatchObject({ matched: 1, retried: 1 });
    } finally {
      await maintenance.close();
    }
  });

  it("discards an entry", async () => {
    pipeline = await seeded();
    const id = encodeURIComponent(deadLetterId(OTHER_SHOP, "6000003"));
    const response = await call(`/admin/api/dead-letters/${id}`, { method: "DELETE" });
    expect(response.status).toBe(200);
    expect((await call(`/admin/api/dead-letters/${id}`)).status).toBe(404);
    expect((await call(`/admin/api/dead-letters/${id}`, { method: "DELETE" })).status).toBe(404);
  });

  it("refuses every dead-letter route without the token or with a wrong one", async () => {
    pipeline = await seeded();
    const id = encodeURIComponent(deadLetterId(TEST_SHOP, "6000001"));
    const routes: [string, string][] = [
      ["GET", "/admin/api/dead-letters"],
      ["GET", `/admin/api/dead-letters/${id}`],
      ["POST", `/admin/api/dead-letters/${id}/retry`],
      ["POST", "/admin/api/dead-letters/retry"],
      ["GET", "/admin/api/dead-letters/retry/dlq-retry-1"],
      ["DELETE", `/admin/api/dead-letters/${id}`],
    ];
    for (const [method, path] of routes) {
      const bare = await pipeline.web.app.request(path, { method });
      expect(bare.status, `${method} ${path}`).toBe(401);
      const wrong = await pipeline.web.app.request(path, {
        method,
        headers: { authorization: "Bearer wrong-token-wrong-token" },
      });
      expect(wrong.status, `${method} ${path}`).toBe(401);
    }
    // Nothing was touched.
    expect((await pipeline.ctx.queues.deadLetter.getJobCounts("waiting")).waiting).toBe(3);
  });
});

describe("/admin/api/dead-letters retry of a stored app/uninstalled", () => {
  it("uninstalls the shop as a delivered one does: status, sweep schedule, backfill", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN }, workers: 0 });
    const p = pipeline;
    const work = await startShopBackgroundWork(p, TEST_SHOP);
    try {
      await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });
      // The delivery was dead-lettered (say its body once failed to parse); the operator fixed
      // what was wrong and retries it from the queue.
      const now = new Date().toISOString();
      const id = deadLetterId(TEST_SHOP, null, "uninstall-1");
      await p.ctx.queues.addDeadLetter(id, {
        shop: TEST_SHOP,
        orderId: null,
        topic: "app/uninstalled",
        webhookId: "uninstall-1",
        reason: "webhook body could not be used: test",
        category: "payload",
        errorClass: "PayloadError",
        rawPayload: JSON.stringify({ id: 1, domain: TEST_SHOP }),
        attempts: 1,
        firstFailedAt: now,
        lastFailedAt: now,
      });

      const response = await call(`/admin/api/dead-letters/${encodeURIComponent(id)}/retry`, {
        method: "POST",
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({
        result: "reingested",
        message: "webhook re-ingested: uninstalled",
      });
      expect((await p.ctx.shops.getShop(TEST_SHOP))?.status).toBe("uninstalled");
      await work.expectStopped();
    } finally {
      await work.close();
    }
  });
});
