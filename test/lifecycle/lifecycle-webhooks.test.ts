import { afterEach, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import type { DeadLetterData } from "../../src/queue/jobs.ts";
import { type LinkRepository, PRIVACY_DUE_MS } from "../../src/store/index.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { startShopBackgroundWork } from "../helpers/shop-background-work.ts";
import { type ModelOrder, orderPayload } from "../helpers/shopify-order-builder.ts";

const OTHER_SHOP = "other-shop.myshopify.com";

const order = (id: number, number: number, email: string): ModelOrder => ({
  id,
  number,
  email,
  createdAt: "2026-11-01T10:00:00-05:00",
  updatedAt: "2026-11-01T10:00:00-05:00",
  cancelledAt: null,
  note: null,
  shippingCents: 500,
  taxBps: 800,
  lines: [
    {
      id: id + 1,
      variantId: 501,
      sku: "TS-1",
      title: "T-shirt",
      price: 1000,
      quantity: 1,
      currentQuantity: 1,
    },
  ],
  fulfillments: [],
  locationId: 4001,
});

const deadLetter = (shop: string, orderId: string, rawPayload: string): DeadLetterData => ({
  shop,
  orderId,
  topic: "orders/create",
  reason: "the provider refused the order: customer.email is invalid",
  category: "provider-validation",
  errorClass: "ProviderValidationError",
  fields: [{ path: "customer.email", message: "invalid" }],
  request: { method: "POST", path: "/orders", body: { customer: { email: "in-body" } } },
  response: { status: 400, body: { message: "invalid" } },
  rawPayload,
  attempts: 1,
  firstFailedAt: new Date().toISOString(),
  lastFailedAt: new Date().toISOString(),
});

let p: Pipeline;
afterEach(async () => {
  await p?.close();
});

const privacyRows = () => p.ctx.db.orm.select().from(p.ctx.db.t.privacyRequests);

describe("app/uninstalled", () => {
  it("stops the shop at once, drops only its queued work and keeps its links", async () => {
    p = await startPipeline();
    await p.ctx.shops.upsertShop(OTHER_SHOP, { storeId: 1001 });
    const synced = await p.send("orders/create", orderPayload(order(5001, 1001, "a@example.com")));
    expect(synced.status).toBe(200);
    await p.drain();
    expect(await p.ctx.links.loadLinks(TEST_SHOP, "5001")).not.toBeNull();

    // Work still waiting: two jobs of the shop, one of another shop.
    const later = { delayMs: 60_000 };
    const now = Date.now();
    await p.ctx.queues.enqueueSync(
      { shop: TEST_SHOP, orderId: "6001", priority: "bulk", trigger: "backfill", receivedAt: now },
      later,
    );
    await p.ctx.queues.enqueueSync(
      { shop: TEST_SHOP, orderId: "6002", priority: "bulk", trigger: "backfill", receivedAt: now },
      later,
    );
    await p.ctx.queues.enqueueSync(
      { shop: OTHER_SHOP, orderId: "7001", priority: "bulk", trigger: "backfill", receivedAt: now },
      later,
    );

    await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });

    const res = await p.send("app/uninstalled", { id: 1, domain: TEST_SHOP });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ outcome: "uninstalled" });

    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    expect(shop?.status).toBe("uninstalled");
    expect(shop?.accessTokenSealed).toBeNull();
    const delayed = await p.ctx.queues.sync.getJobs(["delayed"]);
    expect(delayed.map((j) => `${j.data.shop}/${j.data.orderId}`)).toEqual([`${OTHER_SHOP}/7001`]);
    expect(await p.ctx.links.loadLinks(TEST_SHOP, "5001")).not.toBeNull();

    // The very next order webhook is not queued (no cached "active" status survives).
    const after = await p.send("orders/create", orderPayload(order(5002, 1002, "b@example.com")));
    expect(await after.json()).toMatchObject({ outcome: "unknown-shop" });
  });
});

describe("app/uninstalled during a sync", () => {
  it("makes no further provider call for an order whose sync is under way", async () => {
    let pipeline: Pipeline | undefined;
    // The uninstall lands right after the provider created the order, before its fulfillment.
    const links = (inner: LinkRepository): LinkRepository =>
      new Proxy(inner, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if (property !== "recordOrderCreated" || typeof value !== "function")
            return typeof value === "function" ? value.bind(target) : value;
          return async (...args: unknown[]) => {
            const result = value.apply(target, args);
            await pipeline?.ctx.shops.setStatus(TEST_SHOP, "uninstalled");
            return result;
          };
        },
      });
    p = pipeline = await startPipeline({ wrapLinks: links });
    const model = order(5101, 1101, "a@example.com");
    model.fulfillments.push({
      id: 7101,
      status: "success",
      trackingNumber: "1Z9",
      shipmentStatus: "in_transit",
      lineIds: [5102],
      createdAt: "2026-11-02T10:00:00Z",
      updatedAt: "2026-11-02T10:00:00Z",
    });
    model.updatedAt = "2026-11-02T10:00:00Z";
    await p.send("orders/create", orderPayload(model));
    await p.drain();

    const [created] = p.sandbox.state.orders.all;
    expect(created).toBeDefined();
    expect(created?.fulfillments).toEqual([]);
    expect(p.sandbox.state.arrivals.map((a) => `${a.method} ${a.path}`)).toEqual([
      "POST /v1/orders",
    ]);
  });
});

describe("app/uninstalled and background work", () => {
  it("removes the shop's sweep schedule and pauses its backfill, dropping the queued backfill job", async () => {
    p = await startPipeline();
    const work = await startShopBackgroundWork(p, TEST_SHOP);
    try {
      await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });

      await p.send("app/uninstalled", { id: 1, domain: TEST_SHOP });

      await work.expectStopped();
    } finally {
      await work.close();
    }
  });
});

describe("privacy webhooks", () => {
  it.each(["customers/data_request", "customers/redact", "shop/redact"])(
    "answers %s with a bad HMAC by 401 and records nothing",
    async (topic) => {
      p = await startPipeline();
      const signed = signWebhook({
        topic,
        shop: TEST_SHOP,
        body: JSON.stringify({ shop_domain: TEST_SHOP, customer: { id: 1 } }),
        secret: "not-the-app-secret",
      });
      const res = await p.web.app.request("/webhooks/shopify", {
        method: "POST",
        headers: signed.headers,
        body: signed.body,
      });
      expect(res.status).toBe(401);
      expect(await privacyRows()).toEqual([]);
    },
  );

  it("customers/redact deletes the customer's snapshots and strips their dead letters' bodies", async () => {
    p = await startPipeline();
    const grace = order(5001, 1001, "grace@example.com");
    const other = order(5003, 1003, "ada@example.com");
    await p.send("orders/create", orderPayload(grace));
    await p.send("orders/create", orderPayload(other));
    await p.drain();
    expect(await p.ctx.snapshots.get(TEST_SHOP, "5001")).not.toBeNull();

    const graceCustomerId = String(900_000 + grace.id);
    await p.ctx.queues.addDeadLetter(
      `${TEST_SHOP}|5001`,
      deadLetter(TEST_SHOP, "5001", '{"email":"grace@example.com"}'),
    );
    await p.ctx.queues.addDeadLetter(
      `${TEST_SHOP}|payload|x`,
      deadLetter(TEST_SHOP, "9999", `{"customer":{"id":${graceCustomerId}}}`),
    );
    await p.ctx.queues.addDeadLetter(
      `${TEST_SHOP}|5003`,
      deadLetter(TEST_SHOP, "5003", '{"email":"ada@example.com"}'),
    );

    const res = await p.send("customers/redact", {
      shop_id: 1,
      shop_domain: TEST_SHOP,
      customer: { id: Number(graceCustomerId), email: "grace@example.com", phone: null },
      orders_to_redact: [5001],
    });
    expect(res.status).toBe(200);

    expect(await p.ctx.snapshots.get(TEST_SHOP, "5001")).toBeNull();
    expect(await p.ctx.snapshots.get(TEST_SHOP, "5003")).not.toBeNull();

    const named = (await p.ctx.queues.deadLetter.getJob(`${TEST_SHOP}|5001`))?.data;
    expect(named?.rawPayload).toBeUndefined();
    expect(named?.request).toEqual({ method: "POST", path: "/orders" });
    expect(named?.response).toEqual({ status: 400 });
    expect(named?.reason).toMatch(/customer\.email is invalid/);
    // A real time stamp of the redaction, not merely a field that exists.
    expect(named?.redactedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(Math.abs(Date.parse(named?.redactedAt as string) - Date.now())).toBeLessThan(600_000);
    const byId = (await p.ctx.queues.deadLetter.getJob(`${TEST_SHOP}|payload|x`))?.data;
    expect(byId?.rawPayload).toBeUndefined();
    const untouched = (await p.ctx.queues.deadLetter.getJob(`${TEST_SHOP}|5003`))?.data;
    expect(untouched?.rawPayload).toBe('{"email":"ada@example.com"}');

    const [row] = await privacyRows();
    expect(row?.topic).toBe("customers/redact");
    expect(Date.parse(row?.dueBy ?? "") - Date.parse(row?.receivedAt ?? "")).toBe(PRIVACY_DUE_MS);
    expect(row?.completedAt).not.toBeNull();
    expect(row?.summary).not.toContain("grace@example.com");
    expect(JSON.parse(row?.summary ?? "{}")).toMatchObject({
      customerId: graceCustomerId,
      orderIds: ["5001"],
      snapshotsDeleted: 1,
      deadLettersRedacted: 2,
    });
  });

  it("customers/redact leaves no trace of the customer in the provider's stored events or claims", async () => {
    p = await startPipeline();
    await p.send("orders/create", orderPayload(order(5001, 1001, "grace@example.com")));
    await p.drain();
    const link = await p.ctx.links.getOrderLinkRow(TEST_SHOP, "5001");
    const base = {
      providerBaseUrl: "https://api.provider.test/v1",
      storeId: 1001,
      shops: [TEST_SHOP],
      apiVersion: "v1",
      sentAt: new Date().toISOString(),
    };
    await p.ctx.providerEvents.record({
      ...base,
      eventId: "reg-1",
      topic: "registration/created",
      kind: "registration",
      payload: JSON.stringify({
        registrationId: 7,
        externalId: "REG-7",
        customerEmail: "GRACE@example.com",
        customerName: "Grace Hopper",
      }),
    });
    await p.ctx.providerEvents.record({
      ...base,
      eventId: "claim-1",
      topic: "claim/created",
      kind: "claim",
      payload: JSON.stringify({
        claimId: 3,
        orderId: link?.orderId,
        shippingAddress: { name: "Grace Hopper", address1: "1 Navy Way" },
      }),
    });
    await p.ctx.providerEvents.record({
      ...base,
      eventId: "claim-2",
      topic: "claim/created",
      kind: "claim",
      payload: JSON.stringify({ claimId: 4, customerEmail: "ada@example.com" }),
    });
    await p.ctx.claims.applyIfNewer({
      shop: TEST_SHOP,
      kind: "claim",
      claimId: "3",
      externalId: "C-3",
      status: "open",
      orderId: link?.orderId ?? null,
      sourceOrderId: "5001",
      orderName: "#1001",
      updatedOn: new Date().toISOString(),
      eventId: "claim-1",
    });

    const res = await p.send("customers/redact", {
      shop_id: 1,
      shop_domain: TEST_SHOP,
      customer: { id: 905001, email: "grace@example.com", phone: null },
      orders_to_redact: [5001],
    });
    expect(res.status).toBe(200);

    const stored = await p.ctx.db.orm.select().from(p.ctx.db.t.providerEvents);
    const claims = await p.ctx.db.orm.select().from(p.ctx.db.t.providerClaims);
    const everything = JSON.stringify([stored, claims]).toLowerCase();
    expect(everything).not.toContain("grace");
    expect(everything).not.toContain("navy way");
    // The rows stay, with their topics and IDs; another customer's body is untouched.
    expect(stored.map((e) => [e.eventId, e.topic, e.redactedAt !== null])).toEqual([
      ["reg-1", "registration/created", true],
      ["claim-1", "claim/created", true],
      ["claim-2", "claim/created", false],
    ]);
    expect(everything).toContain("ada@example.com");
    expect(claims).toHaveLength(1);
    const [row] = await privacyRows();
    expect(JSON.parse(row?.summary ?? "{}")).toMatchObject({ providerEventsRedacted: 2 });
  });

  it("shop/redact deletes its sole store's provider events and keeps a shared store's for the other shop", async () => {
    p = await startPipeline();
    const stored = () =>
      p.ctx.db.orm
        .select()
        .from(p.ctx.db.t.providerEvents)
        .then((rows) => rows.map((r) => [r.storeId, r.eventId, JSON.parse(r.shops)]));
    const record = (storeId: number, eventId: string, shops: string[]) =>
      p.ctx.providerEvents.record({
        providerBaseUrl: "https://api.provider.test/v1",
        storeId,
        eventId,
        shops,
        topic: "claim/created",
        kind: "claim",
        apiVersion: "v1",
        sentAt: new Date().toISOString(),
        payload: JSON.stringify({ claimId: 1, customerEmail: "grace@example.com" }),
      });
    // The sole shop on store 1001.
    await record(1001, "sole", [TEST_SHOP]);
    await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });

    await p.send("app/uninstalled", { id: 1, myshopify_domain: TEST_SHOP });
    expect((await p.send("shop/redact", { shop_id: 1, shop_domain: TEST_SHOP })).status).toBe(200);
    expect(await stored()).toEqual([]);

    // A store shared with another shop: its events stay, without the redacted shop.
    await p.ctx.shops.upsertShop(TEST_SHOP, { storeId: 2002 });
    await p.ctx.shops.upsertShop(OTHER_SHOP, { storeId: 2002 });
    await record(2002, "shared", [TEST_SHOP, OTHER_SHOP]);
    await record(2002, "only-redacted", [TEST_SHOP]);
    await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });

    await p.send(
      "app/uninstalled",
      { id: 1, myshopify_domain: TEST_SHOP },
      { webhookId: "uninstall-2", eventId: "uninstall-2" },
    );
    const again = { webhookId: "redact-2", eventId: "redact-2" };
    const res = await p.send("shop/redact", { shop_id: 1, shop_domain: TEST_SHOP }, again);
    expect(res.status).toBe(200);
    expect(await stored()).toEqual([[2002, "shared", [OTHER_SHOP]]]);
  });

  it("shop/redact deletes the shop's links, snapshots, dead letters and settings, keeping the record", async () => {
    p = await startPipeline();
    await p.ctx.shops.upsertShop(OTHER_SHOP, { storeId: 1001 });
    await p.send("orders/create", orderPayload(order(5001, 1001, "grace@example.com")));
    await p.drain();
    await p.ctx.queues.addDeadLetter(`${TEST_SHOP}|5001`, deadLetter(TEST_SHOP, "5001", "{}"));
    await p.ctx.queues.addDeadLetter(`${OTHER_SHOP}|1`, deadLetter(OTHER_SHOP, "1", "{}"));

    // Shopify sends shop/redact 48 hours after the uninstall.
    await p.shopify.uninstallShop(TEST_SHOP, { deliver: false });

    await p.send("app/uninstalled", { id: 1, myshopify_domain: TEST_SHOP });
    const res = await p.send("shop/redact", { shop_id: 1, shop_domain: TEST_SHOP });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ outcome: "privacy" });

    expect(await p.ctx.shops.getShop(TEST_SHOP)).toBeNull();
    expect(await p.ctx.links.loadLinks(TEST_SHOP, "5001")).toBeNull();
    expect(await p.ctx.snapshots.get(TEST_SHOP, "5001")).toBeNull();
    expect(await p.ctx.queues.deadLetter.getJob(`${TEST_SHOP}|5001`)).toBeUndefined();
    expect(await p.ctx.queues.deadLetter.getJob(`${OTHER_SHOP}|1`)).toBeDefined();
    expect(await p.ctx.shops.getShop(OTHER_SHOP)).not.toBeNull();
    const [row] = await privacyRows();
    expect(row).toMatchObject({ shop: TEST_SHOP, topic: "shop/redact" });
    expect(row?.completedAt).not.toBeNull();
  });

  it("customers/data_request is recorded with its due date and the orders we hold", async () => {
    p = await startPipeline();
    await p.send("orders/create", orderPayload(order(5001, 1001, "grace@example.com")));
    await p.drain();
    const res = await p.send("customers/data_request", {
      shop_domain: TEST_SHOP,
      customer: { id: 905001, email: "grace@example.com" },
      orders_requested: [5001, 5009],
      data_request: { id: 42 },
    });
    expect(res.status).toBe(200);
    const [row] = await privacyRows();
    expect(row?.topic).toBe("customers/data_request");
    expect(Date.parse(row?.dueBy ?? "") - Date.parse(row?.receivedAt ?? "")).toBe(PRIVACY_DUE_MS);
    expect(JSON.parse(row?.summary ?? "{}")).toMatchObject({
      orderIds: ["5001", "5009"],
      snapshotsHeld: ["5001"],
    });
  });
});

describe("shop/update", () => {
  it("picks up a currency and time-zone change without a reinstall, and refuses another shop's body", async () => {
    p = await startPipeline();
    const res = await p.send("shop/update", {
      id: 1,
      myshopify_domain: TEST_SHOP,
      currency: "EUR",
      iana_timezone: "Europe/Berlin",
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ outcome: "shop-updated" });
    expect(await p.ctx.shops.getShop(TEST_SHOP)).toMatchObject({
      shopCurrency: "EUR",
      shopTimezone: "Europe/Berlin",
    });
    const forged = await p.send("shop/update", {
      id: 2,
      myshopify_domain: OTHER_SHOP,
      currency: "JPY",
    });
    expect(forged.status).toBe(400);
    expect((await p.ctx.shops.getShop(TEST_SHOP))?.shopCurrency).toBe("EUR");
  });
});
