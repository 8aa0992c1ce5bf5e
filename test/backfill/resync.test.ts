import { afterEach, describe, expect, it, vi } from "vitest";
import { resync } from "../../src/backfill/index.ts";
import type { ShopRecord } from "../../src/store/index.ts";
import { ORDER_REF_FORMS } from "../../src/sync/order-ref.ts";
import { orderRef } from "../helpers/orders.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";
import { AMPLE_BUDGET, standInOrder } from "../helpers/standin-orders.ts";

const ADMIN_TOKEN = "resync-admin-token-0123456789";
const NOT_AN_ID = "is not an order's ID (a whole number from 1 to 18446744073709551615)";

let pipeline: Pipeline;
afterEach(async () => {
  await pipeline?.close();
});

const shopRecord = async () => (await pipeline.ctx.shops.getShop(TEST_SHOP)) as ShopRecord;
const providerOrderIds = () => pipeline.sandbox.state.orders.all.map((o) => o.sourceOrderId).sort();

async function seed(days: number[]) {
  for (const day of days) {
    const { payload } = standInOrder(day, `2026-10-${String(day).padStart(2, "0")}T12:00:00Z`);
    // Webhooks never delivered: only a resync can bring these orders to the provider.
    await pipeline.shopify.upsertOrder(TEST_SHOP, payload, { deliver: false });
  }
}

describe("resync", () => {
  it("runs a range or every order through the admin API as a backfill: 202 at once, then the workers", async () => {
    pipeline = await startPipeline({
      sandbox: AMPLE_BUDGET.sandbox,
      env: { ...AMPLE_BUDGET.env, ADMIN_TOKEN },
    });
    await seed([1, 5, 9, 10, 11, 20]);
    const call = (body: unknown) =>
      pipeline.web.app.request(`/admin/api/shops/${TEST_SHOP}/resync`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    // Answered before a page is read: no worker of the backfill queue runs yet.
    const range = await call({ since: "2026-10-05T12:00:00Z", until: "2026-10-11T12:00:00Z" });
    expect(range.status).toBe(202);
    expect(range.headers.get("location")).toBe(`/admin/api/shops/${TEST_SHOP}/backfill`);
    expect(await range.json()).toMatchObject({
      started: true,
      status: "running",
      since: "2026-10-05T12:00:00.000Z",
      until: "2026-10-11T12:00:00.000Z",
    });
    // One at a time per shop: another window while it runs is refused, not folded into it.
    const meanwhile = await call({ all: true });
    expect(meanwhile.status).toBe(409);
    expect(await meanwhile.json()).toMatchObject({
      error: { code: "backfill_running" },
      backfill: { since: "2026-10-05T12:00:00.000Z", status: "running" },
    });
    pipeline.startBackfillWorker();
    const backfillDone = () =>
      vi.waitFor(
        async () =>
          expect((await pipeline.ctx.backfills.latest(TEST_SHOP))?.status).toBe("completed"),
        { timeout: 60_000, interval: 20 },
      );
    await backfillDone();
    await pipeline.drain();
    expect(providerOrderIds()).toEqual(["10", "5", "9"]);
    // Every order: a backfill with no start, up to now.
    const all = await call({ all: true });
    expect(all.status).toBe(202);
    expect(await all.json()).toMatchObject({ started: true, since: null });
    await backfillDone();
    await pipeline.drain();
    expect(providerOrderIds()).toEqual(["1", "10", "11", "20", "5", "9"]);
  });

  it("syncs one order found by its name, and only that order", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    await seed([1, 2, 3]);
    const result = await resync(pipeline.ctx, await shopRecord(), {
      kind: "order",
      order: orderRef("#1002"),
    });
    expect(result).toEqual({ found: 1, stored: 1, queued: 1 });
    await pipeline.drain();
    expect(providerOrderIds()).toEqual(["2"]);
    expect(pipeline.sandbox.state.orders.find(1001, "2")?.orderName).toBe("#1002");
  });

  it("syncs the orders updated in a date range, including the start and excluding the end", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    await seed([1, 5, 9, 10, 11, 20]);
    const result = await resync(pipeline.ctx, await shopRecord(), {
      kind: "range",
      since: "2026-10-05T12:00:00.000Z",
      until: "2026-10-11T12:00:00.000Z",
    });
    expect(result.found).toBe(3);
    await pipeline.drain();
    expect(providerOrderIds()).toEqual(["10", "5", "9"]);
  });

  it("keeps a newer snapshot from a webhook over an older state read from Shopify", async () => {
    pipeline = await startPipeline({ ...AMPLE_BUDGET });
    const { model, payload } = standInOrder(7, "2026-10-07T12:00:00Z");
    await pipeline.shopify.upsertOrder(TEST_SHOP, payload, { deliver: false });
    // The webhook of a later edit arrived; Shopify's search still returns the older version.
    const newer = orderPayload({ ...model, updatedAt: "2026-10-08T12:00:00Z", note: "newer" });
    expect((await pipeline.send("orders/updated", newer)).status).toBe(200);
    await pipeline.drain();
    const result = await resync(pipeline.ctx, await shopRecord(), {
      kind: "order",
      order: orderRef("7"),
    });
    expect(result).toEqual({ found: 1, stored: 0, queued: 1 });
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.find(1001, "7")?.notes).toBe("newer");
  });

  it("answers the admin API with the result, and 404 for an order Shopify does not have", async () => {
    pipeline = await startPipeline({
      sandbox: AMPLE_BUDGET.sandbox,
      env: { ...AMPLE_BUDGET.env, ADMIN_TOKEN },
    });
    await seed([3]);
    const call = (body: unknown) =>
      pipeline.web.app.request(`/admin/api/shops/${TEST_SHOP}/resync`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const ok = await call({ order: "#1003" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ found: 1, stored: 1, queued: 1 });
    const missing = await call({ order: "#4040" });
    expect(missing.status).toBe(404);
    // Any text but a number or a gid is a name, looked for as one.
    const name = await call({ order: "EU-4040" });
    expect(name.status).toBe(404);
    expect(await name.json()).toMatchObject({ error: { message: "Shopify has no order EU-4040" } });
    // The ID as a JSON number, as an operator's script may send it.
    const numeric = await call({ order: 3 });
    expect(numeric.status).toBe(200);
    expect(await numeric.json()).toEqual({ found: 1, stored: 0, queued: 1 });
    // Each mistake named by its field, under the forms the body may take.
    const errorOf = async (response: Response) =>
      ((await response.json()) as { error: { code: string; message: string; fields: unknown } })
        .error;
    const forms = "give exactly one of order, since (with an optional until) or all: true";
    for (const [body, fields] of [
      [{ order: "#1003", all: true }, [{ path: "", message: "order and all given together" }]],
      [{}, [{ path: "", message: "none of them given" }]],
      [{ oder: "#1003" }, [{ path: "oder", message: "unknown field" }]],
      [{ order: "#1003", force: true }, [{ path: "force", message: "unknown field" }]],
      [{ all: false }, [{ path: "all", message: "must be true" }]],
      [[3], [{ path: "", message: "must be a JSON object" }]],
      // Text that can be no order's, named as such: before, looked for and answered 404.
      ...(
        [
          ["-5", NOT_AN_ID],
          ["0", NOT_AN_ID],
          ["1.5", NOT_AN_ID],
          ["18446744073709551616", NOT_AN_ID],
          ["gid://shopify/Order/abc", "is not an order's ID (gid://shopify/Order/ and its digits)"],
          ["gid://shopify/Order/-5", "is not an order's ID (gid://shopify/Order/ and its digits)"],
          ["gid://shopify/Product/5", "is the ID of a Product, not an order"],
        ] as const
      ).map(
        ([order, why]) =>
          [{ order }, [{ path: "order", message: `${why}: give ${ORDER_REF_FORMS}` }]] as const,
      ),
      [
        { order: true },
        [
          {
            path: "order",
            message:
              'must be the order\'s Shopify ID or name, such as "5906323456123" or "#1001" (an ID beyond 2^53 as a string)',
          },
        ],
      ],
    ] as const) {
      const refused = await call(body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(await errorOf(refused), JSON.stringify(body)).toEqual({
        code: "invalid_request",
        message: forms,
        fields,
      });
    }
    const garbled = await pipeline.web.app.request(`/admin/api/shops/${TEST_SHOP}/resync`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: '{"order": ',
    });
    expect(garbled.status).toBe(400);
    expect((await errorOf(garbled)).code).toBe("invalid_json");
    // A date Date.parse would guess at ("1" as 2001, February 30th as March 2nd), and an end
    // before the start: 400 naming the field, nothing read from Shopify.
    const fieldsOf = async (response: Response) =>
      ((await response.json()) as { error: { fields: { path: string; message: string }[] } }).error
        .fields;
    for (const since of ["1", "2026-02-30", "2026-10-01T12:00"]) {
      const guessed = await call({ since });
      expect(guessed.status, since).toBe(400);
      expect(await fieldsOf(guessed), since).toContainEqual({
        path: "since",
        message:
          "must be a date such as 2026-01-31 (from midnight UTC) or a date-time with an offset such as 2026-01-31T09:00:00Z",
      });
    }
    const backwards = await call({ since: "2026-10-02", until: "2026-10-01" });
    expect(backwards.status).toBe(400);
    expect(await fieldsOf(backwards)).toContainEqual({
      path: "until",
      message: "must be after since",
    });
    // Before: 200 {"found": 0}, as if the shop had no order to repair, as `--since` refuses it.
    const ahead = await call({ since: "2999-01-01", until: "2999-02-01" });
    expect(ahead.status).toBe(400);
    expect(await fieldsOf(ahead)).toEqual([
      { path: "since", message: "must not be in the future" },
    ]);
    const future = await pipeline.web.app.request(`/admin/api/shops/${TEST_SHOP}/backfill`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ since: "2999-01-01" }),
    });
    expect(future.status).toBe(400);
    expect(await future.json()).toMatchObject({
      error: {
        message: "give nothing, or since: the date to start from",
        fields: [{ path: "since", message: "must not be in the future" }],
      },
    });
    expect(await pipeline.ctx.backfills.latest(TEST_SHOP)).toBeNull();
    await pipeline.drain();
    expect(providerOrderIds()).toEqual(["3"]);
  });
});
