import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RestOrder } from "@connector/shopify-standin";
import type { JobType } from "bullmq";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { type Connector, createConnector } from "../../src/app/connector.ts";
import { composeWebApp } from "../../src/app/web.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import type { ProviderEventWorkerHandle } from "../../src/jobs/provider-event-worker.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { sealedFor } from "../../src/lib/secret-box.ts";
import { BulkRetryQueue, RECONNECT_JOB } from "../../src/ops/bulk-retry.ts";
import { signProviderBody } from "../../src/provider/webhook-verify.ts";
import { ProviderEventQueue } from "../../src/queue/provider-event-queue.ts";
import { RECONNECT_NEEDED } from "../../src/shopify/install/shop-tokens.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import {
  type CookieJar,
  type InstallHarness,
  providerEventWorker,
  startInstallHarness,
} from "../helpers/install-harness.ts";
import { startPostgres } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const SHOP = "claims-shop.myshopify.com";
const PROVIDER = { clientId: "merchant-client", clientSecret: "merchant-secret-4f9a1c" };
const WEBHOOK_SECRET = "whsec_claims_test_4c1d9e7a2b";
const SHOPIFY_ORDER = 7_700_042;

let h: InstallHarness;
let jar: CookieJar;
let worker: ProviderEventWorkerHandle | undefined;
let logs: ReturnType<typeof captureLogs> | undefined;
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await worker?.close();
  worker = undefined;
  await h?.close();
  // Last registered, first run: queues before their connections, connections before servers.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  logs?.remove();
  logs = undefined;
});

/** The sandbox's control API (claims, registrations, deliveries). */
async function control(method: string, path: string, body?: unknown) {
  const res = await fetch(`${h.provider.authUrl}/_sandbox${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the control API's answers are read field by field
  return { status: res.status, body: (await res.json()) as any };
}

/**
 * The connector (web and workers) against the sandbox with its control API, the shop installed
 * and bound to store 1001, the webhook secret entered on the settings page, and the sandbox
 * sending its events to the connector's /webhooks/provider with that secret.
 */
async function start(
  options: { secret?: boolean; captureLogs?: boolean; keepQueuedEveryMs?: number } = {},
) {
  logs = options.captureLogs ? captureLogs("provider-events") : undefined;
  h = await startInstallHarness({
    workers: true,
    provider: { ...PROVIDER, stores: [1001, 1002], control: true },
    ...(logs ? { logDestination: logs.destination, env: { LOG_LEVEL: "debug" } } : {}),
  });
  ({ jar } = await h.install(SHOP));
  await h.postForm("/settings/provider", { ...PROVIDER, environment: "production" }, jar);
  await h.postForm("/settings/store", { storeId: "1001" }, jar);
  if (options.secret !== false) {
    const saved = await h.postForm(
      "/settings/claims/secret",
      { webhookSecret: WEBHOOK_SECRET },
      jar,
    );
    expect(saved.status).toBe(303);
  }
  worker = await providerEventWorker(
    h,
    options.keepQueuedEveryMs ? { keepQueuedEveryMs: options.keepQueuedEveryMs } : {},
  );
  const subscribed = await control("PUT", "/webhooks", {
    url: `${h.appUrl}/webhooks/provider`,
    secret: WEBHOOK_SECRET,
    backoffMs: 200,
  });
  expect(subscribed.status).toBe(200);
}

/**
 * Every job the provider-event queue holds, in any state, once it has nothing left to run (no
 * job waiting, due or active): what ran, and how many times.
 */
async function providerEventJobsOnceDrained(): Promise<
  { id: string | undefined; state: string; attemptsMade: number }[]
> {
  const queue = new ProviderEventQueue(h.ctx.redis, h.ctx.prefix);
  try {
    await expect
      .poll(async () =>
        Object.values(
          await queue.queue.getJobCounts("waiting", "prioritized", "delayed", "active"),
        ).reduce((sum, count) => sum + count, 0),
      )
      .toBe(0);
    const jobs = await queue.queue.getJobs();
    return Promise.all(
      jobs.map(async (job) => ({
        id: job.id,
        state: await job.getState(),
        attemptsMade: job.attemptsMade,
      })),
    );
  } finally {
    await queue.close();
  }
}

/** A Shopify order, synced to the sandbox through the connector; its provider order ID. */
async function syncedOrder(): Promise<number> {
  await h.standIn.upsertOrder(
    SHOP,
    orderPayload({
      id: SHOPIFY_ORDER,
      number: 1042,
      email: "claimant@example.com",
      createdAt: "2026-11-10T10:00:00Z",
      updatedAt: "2026-11-10T10:00:00Z",
      cancelledAt: null,
      note: null,
      shippingCents: 0,
      taxBps: 0,
      lines: [
        {
          id: 1,
          variantId: 5101,
          sku: "SOCK-M",
          title: "Socks",
          price: 1800,
          quantity: 1,
          currentQuantity: 1,
        },
      ],
      fulfillments: [],
      locationId: 4001,
    }) as RestOrder,
  );
  await expect
    .poll(async () => (await h.ctx.links.getOrderLinkRow(SHOP, String(SHOPIFY_ORDER)))?.orderId, {
      timeout: 15_000,
    })
    .toBeGreaterThan(0);
  return (await h.ctx.links.getOrderLinkRow(SHOP, String(SHOPIFY_ORDER)))?.orderId as number;
}

const SPACE = () => ({ providerBaseUrl: h.provider.url, storeId: 1001 });
const claimsOf = () => h.ctx.claims.listForShop(SHOP);
const storedEvents = () => h.ctx.providerEvents.recent(SPACE());
const orderTags = () =>
  String(h.standIn.state.shop(SHOP)?.orders.get(String(SHOPIFY_ORDER))?.tags ?? "");
const settingsPage = async () => (await h.get("/settings", jar)).text();
/** The maintenance queue's jobs that resume what waited for the shop's token, in these states. */
async function reconnectJobs(states: JobType[]) {
  const queue = new BulkRetryQueue(h.ctx.redis, h.ctx.prefix);
  try {
    return (await queue.queue.getJobs(states)).filter((j) => j.name === RECONNECT_JOB);
  } finally {
    await queue.close();
  }
}
/** The order now carries its open claim's tag, and the claim records it with no refusal. */
async function taggedOpenAfterAll() {
  await expect.poll(orderTags).toBe("protection-claim:open");
  await expect
    .poll(async () => (await claimsOf())[0])
    .toMatchObject({ taggedStatus: "open", tagError: null });
}

/** The shop on store 1001 of client-1 at `baseUrl`, with the provider's webhook secret stored. */
async function shopWithWebhookSecret(ctx: Connector, baseUrl: string) {
  await ctx.ready();
  await ctx.shops.upsertShop(SHOP, { storeId: 1001, providerClientId: "client-1" });
  await ctx.webhookSecrets.set(
    { providerBaseUrl: baseUrl, clientId: "client-1" },
    ctx.secrets.seal(WEBHOOK_SECRET, sealedFor.providerWebhookSecret(baseUrl, "client-1")),
  );
}

describe("the provider's events over HTTP, from the sandbox", () => {
  it("accepts a signed claim event, maps it to the Shopify order and shows it on the settings page", async () => {
    await start();
    const orderId = await syncedOrder();
    const opened = await control("POST", "/claims", { orderId });
    expect(opened.status).toBe(201);
    expect(opened.body.delivery).toMatchObject({ status: 200, topic: "claim/created" });
    expect(JSON.parse(opened.body.delivery.answer)).toEqual({ ok: true, outcome: "queued" });
    const claimId = String(opened.body.claim.claimId);

    await expect.poll(async () => (await claimsOf())[0]?.status, { timeout: 10_000 }).toBe("open");
    const [claim] = await claimsOf();
    expect(claim).toMatchObject({
      kind: "claim",
      claimId,
      externalId: `CLM-${claimId}`,
      orderId,
      sourceOrderId: String(SHOPIFY_ORDER),
      orderName: "#1042",
    });
    // The claim row is written before the event is marked processed: wait for the mark.
    await expect.poll(async () => (await storedEvents())[0]?.processedAt).not.toBeNull();
    const [event] = await storedEvents();
    expect(event).toMatchObject({ topic: "claim/created", kind: "claim", shops: [SHOP] });

    const page = await settingsPage();
    expect(page).toContain(`data-claim="claim:${claimId}"`);
    expect(page).toMatch(new RegExp(`Claim CLM-${claimId}</td><td>open</td><td>#1042</td>`));
    // Tagging is off by default: the Shopify order is left alone.
    expect(orderTags()).toBe("");
  });

  it("refuses unsigned, wrongly signed, stale and unknown-store deliveries (401) and stores nothing", async () => {
    await start();
    const refused = async (delivery: Record<string, unknown>, storeId?: number) => {
      const res = await control("POST", "/claims", {
        sourceOrderId: "1",
        ...(storeId ? { storeId } : {}),
        delivery: { retry: false, ...delivery },
      });
      expect(res.body.delivery.status).toBe(401);
      return JSON.parse(res.body.delivery.answer).error;
    };
    expect(await refused({ signature: "none" })).toMatchObject({
      code: "missing_signature",
      fields: [{ path: "headers.x-webhook-signature", message: "required" }],
    });
    expect(await refused({ signature: "bad" })).toMatchObject({ code: "invalid_signature" });
    const tenMinutesAgo = String(Math.floor(Date.now() / 1000) - 600);
    expect(await refused({ timestamp: tenMinutesAgo })).toMatchObject({
      code: "stale_timestamp",
      fields: [{ path: "headers.x-webhook-timestamp" }],
    });
    // Store 1002 is the provider account's, but no shop is bound to it.
    expect(await refused({}, 1002)).toMatchObject({ code: "unknown_store" });

    // Malformed headers: 400 naming the header.
    const body = JSON.stringify({ claimId: 1 });
    const malformed = await fetch(`${h.appUrl}/webhooks/provider`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-webhook-signature": signProviderBody(WEBHOOK_SECRET, body),
        "x-webhook-timestamp": "yesterday",
      },
      body,
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({
      error: {
        code: "missing_headers",
        fields: [{ path: "headers.x-store-id", message: "required" }],
      },
    });

    expect(await storedEvents()).toEqual([]);
    expect(await claimsOf()).toEqual([]);
    // Counted by outcome for the operator.
    const metrics = await (await h.get("/metrics")).text();
    for (const outcome of ["missing_signature", "invalid_signature", "stale_timestamp"]) {
      expect(metrics).toContain(
        `connector_webhooks_received_total{topic="provider",outcome="rejected:${outcome}"} 1`,
      );
    }
  });

  it("answers a signed delivery whose timestamp is past any date 400 naming the header, not 503", async () => {
    // A timestamp header is not signed: anyone holding a signed body can send it with this.
    await start({ captureLogs: true });
    const sent = await control("POST", "/claims", {
      sourceOrderId: "1",
      delivery: { retry: false, timestamp: "9999999999999999" },
    });
    expect(sent.body.delivery.status).toBe(400);
    expect(JSON.parse(sent.body.delivery.answer)).toEqual({
      error: {
        code: "invalid_headers",
        message: "provider webhook headers are malformed",
        fields: [
          {
            path: "headers.x-webhook-timestamp",
            message: "must be seconds or milliseconds since 1970, or an ISO 8601 date-time",
          },
        ],
      },
    });
    expect(await storedEvents()).toEqual([]);
    // Refused as bad input, never as an outage of the store.
    const lines = logs?.read() ?? "";
    expect(lines).toContain('"code":"invalid_headers"');
    expect(lines).not.toContain("could not make the provider event durable");
  });

  it("answers a replay 200 and processes the event once", async () => {
    await start();
    const opened = await control("POST", "/claims", { sourceOrderId: "123" });
    const webhookId = opened.body.delivery.webhookId as string;
    await expect.poll(async () => (await storedEvents())[0]?.processedAt).not.toBeNull();
    const [first] = await storedEvents();

    const replay = await control("POST", "/webhooks/replay", { webhookId });
    expect(replay.body.delivery.status).toBe(200);
    expect(JSON.parse(replay.body.delivery.answer)).toEqual({ ok: true, outcome: "duplicate" });
    // Both deliveries accounted for: the first queued, the replay counted as a duplicate…
    const metrics = await (await h.get("/metrics")).text();
    for (const outcome of ["queued", "duplicate"]) {
      expect(metrics).toContain(
        `connector_webhooks_received_total{topic="provider",outcome="${outcome}"} 1`,
      );
    }
    // …and, once nothing is left to run, the first delivery's job is the only one, run once.
    expect(await providerEventJobsOnceDrained()).toEqual([
      { id: `provider-event-${first?.id}`, state: "completed", attemptsMade: 1 },
    ]);
    const events = await storedEvents();
    expect(events).toHaveLength(1);
    // The row's processing is the first one's: nothing ran again.
    expect(events[0]?.processedAt).toBe(first?.processedAt);
    expect(events[0]?.outcome).toBe(first?.outcome);
    expect(await h.ctx.providerEvents.unprocessed(10)).toEqual([]);
  });

  it("processes an event whose job Redis lost while the worker ran", async () => {
    await start({ keepQueuedEveryMs: 100 });
    const running = worker as ProviderEventWorkerHandle;
    // Nothing is taken until the job is gone.
    await running.worker.pause();
    await control("POST", "/claims", { sourceOrderId: "123" });
    await expect.poll(async () => (await storedEvents()).length).toBe(1);
    const [stored] = await storedEvents();
    const jobId = `provider-event-${stored?.id}`;
    const queue = new ProviderEventQueue(h.ctx.redis, h.ctx.prefix);
    try {
      // Redis restarted without persistence: the stored event stays, its job is gone.
      await expect.poll(async () => (await queue.queue.getJob(jobId)) !== undefined).toBe(true);
      await queue.queue.remove(jobId);
      await running.worker.resume();
      await expect.poll(async () => (await storedEvents())[0]?.processedAt).not.toBeNull();
      expect(await claimsOf()).toHaveLength(1);
    } finally {
      await queue.close();
    }
  });

  it("keeps an event of an unknown topic and shows it; never an error", async () => {
    await start();
    const sent = await control("POST", "/webhooks/send", {
      topic: "return/label_printed",
      body: { returnId: 77, note: "not a claim" },
    });
    expect(sent.body.delivery.status).toBe(200);
    await expect.poll(async () => (await storedEvents())[0]?.outcome).toMatch(/^kept: unknown/);
    const [event] = await storedEvents();
    expect(event).toMatchObject({ kind: "unknown", topic: "return/label_printed" });
    // A known topic whose body is not JSON, and one whose body holds no claim ID: kept too.
    await control("POST", "/webhooks/send", { topic: "claim/created", body: "<claim/>" });
    await control("POST", "/webhooks/send", { topic: "claim/updated", body: { note: "?" } });
    await expect
      .poll(async () => (await storedEvents()).filter((e) => e.processedAt !== null).length)
      .toBe(3);
    const page = await settingsPage();
    expect(page).toContain("Other events from the provider");
    expect(page).toContain("return/label_printed");
    expect(page).toContain("kept: unknown topic");
    expect(page).toContain("kept: the body is not JSON");
    expect(page).toContain("kept: no claim ID in the body");
    expect(await claimsOf()).toEqual([]);
  });

  it("does not let an older event overwrite a newer status", async () => {
    await start();
    const opened = await control("POST", "/claims", { sourceOrderId: "123" });
    const claimId = opened.body.claim.claimId as number;
    await expect.poll(async () => (await claimsOf())[0]?.status).toBe("open");
    // The provider sends "in_review" but it arrives after "approved", which it sent later.
    const late = await control("POST", `/claims/${claimId}`, {
      status: "in_review",
      delivery: { hold: true },
    });
    await control("POST", `/claims/${claimId}`, { status: "approved" });
    await expect.poll(async () => (await claimsOf())[0]?.status).toBe("approved");
    const released = await control("POST", "/webhooks/release", {
      webhookId: late.body.delivery.webhookId,
    });
    expect(released.body.delivery.status).toBe(200);
    await expect
      .poll(async () => (await storedEvents()).every((e) => e.processedAt !== null))
      .toBe(true);
    expect((await claimsOf())[0]?.status).toBe("approved");
    const ignored = (await storedEvents()).find((e) => e.eventId === late.body.delivery.webhookId);
    expect(ignored?.outcome).toContain("older than the stored state; ignored");
  });

  it("retries a refused delivery with backoff until the secret is entered", async () => {
    await start({ secret: false });
    const opened = await control("POST", "/claims", { sourceOrderId: "123" });
    expect(opened.body.delivery.status).toBe(401);
    expect(JSON.parse(opened.body.delivery.answer).error.code).toBe("unknown_store");
    const saved = await h.postForm(
      "/settings/claims/secret",
      { webhookSecret: WEBHOOK_SECRET },
      jar,
    );
    expect(saved.status).toBe(303);
    await expect.poll(async () => (await claimsOf())[0]?.status, { timeout: 10_000 }).toBe("open");
    const { body } = await control("GET", "/webhooks/deliveries");
    const delivery = body.deliveries.find(
      (d: { webhookId: string }) => d.webhookId === opened.body.delivery.webhookId,
    );
    expect(delivery.state).toBe("delivered");
    expect(delivery.attempts.length).toBeGreaterThan(1);
    expect(delivery.attempts[0].status).toBe(401);
    expect(delivery.attempts.at(-1).status).toBe(200);
  });

  it("stores registration events for the registrations view, and logs no customer data", async () => {
    await start({ captureLogs: true });
    const added = await control("POST", "/webhooks/registrations", {
      customerEmail: "private.person@example.com",
      customerName: "Private Person",
    });
    expect(added.body.delivery.status).toBe(200);
    await expect
      .poll(async () => (await h.ctx.providerEvents.recentRegistrationEvents(SPACE()))[0]?.outcome)
      .toMatch(/^registration \d+ created$/);
    const [registration] = await h.ctx.providerEvents.recentRegistrationEvents(SPACE());
    expect(registration?.registration).toMatchObject({
      registrationId: added.body.registration.registrationId,
      customerEmail: "private.person@example.com",
    });
    // The Registrations tab lists what the provider just reported, beside its own list.
    const tab = await (await h.get("/settings/registrations", jar)).text();
    const externalId = added.body.registration.externalId as string;
    expect(tab).toContain("Just reported by the provider");
    expect(tab).toMatch(
      new RegExp(`<li>${externalId}: created, \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC</li>`),
    );
    const lines = logs?.read() ?? "";
    expect(lines).toContain("provider event queued");
    expect(lines).not.toContain("private.person@example.com");
    expect(lines).not.toContain("Private Person");
    expect(lines).not.toContain(WEBHOOK_SECRET);
  });
});

describe("accepted shapes (docs/provider-contract.md, Events)", () => {
  const send = (headers: Record<string, string>, body: string) =>
    fetch(`${h.appUrl}/webhooks/provider`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });

  it("reads X-Provider- headers, base64 and rotated signatures, ms timestamps, and wrapped bodies", async () => {
    await start();
    const body1 = JSON.stringify({
      event: "claims.updated",
      payload: { storeId: 1001, claimId: 9001, status: "Approved", orderNumber: "1042" },
    });
    const hex = signProviderBody(WEBHOOK_SECRET, body1).slice("sha256=".length);
    const first = await send(
      {
        "X-Provider-Webhook-Id": "evt-wrapped-1",
        "X-Provider-Store-Id": "1001",
        "X-Provider-Timestamp": String(Date.now()),
        // A rotation: the old secret's signature first, then the current one's in base64.
        "X-Provider-Signature": `sha256=${"0".repeat(64)}, ${Buffer.from(hex, "hex").toString("base64")}`,
      },
      body1,
    );
    expect(first.status).toBe(200);

    // `{ data }` with the topic in the body, signed over `timestamp.body`, ISO timestamp.
    const timestamp = new Date().toISOString();
    const body2 = JSON.stringify({
      id: "evt-wrapped-2",
      topic: "shipping-claim/created",
      data: { storeId: 1001, shippingClaimId: "SC-7", state: "open" },
    });
    const second = await send(
      {
        "x-store-id": "1001",
        "x-webhook-timestamp": timestamp,
        "x-webhook-signature": signProviderBody(WEBHOOK_SECRET, `${timestamp}.${body2}`),
      },
      body2,
    );
    expect(second.status).toBe(200);

    await expect.poll(async () => (await claimsOf()).length).toBe(2);
    const claims = await claimsOf();
    expect(claims.find((c) => c.claimId === "9001")).toMatchObject({
      kind: "claim",
      status: "approved",
      sourceOrderId: null,
      orderName: "1042",
    });
    expect(claims.find((c) => c.claimId === "SC-7")).toMatchObject({
      kind: "shipping_claim",
      status: "open",
    });
    const events = await storedEvents();
    expect(events.map((e) => e.eventId).sort()).toEqual(["evt-wrapped-1", "evt-wrapped-2"]);
  });
});

describe("tagging Shopify orders with the claim's status", () => {
  it("is refused without write_orders, then tags the order once granted and turned on", async () => {
    await start();
    const orderId = await syncedOrder();
    const refused = await h.postForm("/settings/claims/tagging", { tagOrders: "on" }, jar);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("needs Shopify&#39;s write_orders permission");
    expect(await h.ctx.claims.tagsOrders(SHOP)).toBe(false);

    // The merchant grants the optional scope in the admin; the page reads it from Shopify.
    h.standIn.state.shop(SHOP)?.scopes.push("write_orders");
    const on = await h.postForm("/settings/claims/tagging", { tagOrders: "on" }, jar);
    expect(on.status).toBe(303);
    expect(await h.ctx.claims.tagsOrders(SHOP)).toBe(true);
    expect((await h.ctx.shops.getShop(SHOP))?.scopes).toContain("write_orders");

    const opened = await control("POST", "/claims", { orderId });
    const claimId = opened.body.claim.claimId as number;
    await expect.poll(orderTags, { timeout: 10_000 }).toBe("protection-claim:open");
    await control("POST", `/claims/${claimId}`, { status: "approved" });
    await expect.poll(orderTags, { timeout: 10_000 }).toBe("protection-claim:approved");
    // The claim row records the tag after Shopify applied it: wait for that write too.
    await expect.poll(async () => (await claimsOf())[0]?.taggedStatus).toBe("approved");
    expect((await claimsOf())[0]).toMatchObject({ taggedStatus: "approved", tagError: null });

    // A second claim on the same order: the order carries each claim's status once.
    const shipping = await control("POST", "/claims", { orderId, kind: "shipping_claim" });
    await expect
      .poll(orderTags, { timeout: 10_000 })
      .toBe("protection-claim:approved, protection-claim:open");
    // The first claim moves to "open" too: "approved" goes, as no claim holds it any more.
    await control("POST", `/claims/${claimId}`, { status: "open" });
    await expect.poll(orderTags, { timeout: 10_000 }).toBe("protection-claim:open");
    await control("POST", `/claims/${shipping.body.claim.claimId}`, { status: "closed" });
    await expect
      .poll(orderTags, { timeout: 10_000 })
      .toBe("protection-claim:open, protection-claim:closed");
  });

  it("tags the orders missed while Shopify refused the shop's token once the merchant reconnects", async () => {
    await start();
    const orderId = await syncedOrder();
    h.standIn.state.shop(SHOP)?.scopes.push("write_orders");
    await h.postForm("/settings/claims/tagging", { tagOrders: "on" }, jar);
    // Shopify no longer accepts the app's token (the shop sat idle past its refresh token).
    await h.ctx.shops.setStatus(SHOP, "paused", RECONNECT_NEEDED);
    await control("POST", "/claims", { orderId });
    await expect
      .poll(async () => (await claimsOf())[0]?.tagError ?? null)
      .toContain("open the app from the Shopify admin");
    expect(orderTags()).toBe("");

    // The merchant opens the app (Shopify's install flow hands it a new token); the worker
    // role's maintenance worker runs what waited for the token.
    await h.maintenanceWorker();
    await h.install(SHOP);
    await taggedOpenAfterAll();
  });

  it("records why an order was not tagged when Shopify refuses (scope revoked)", async () => {
    await start();
    const orderId = await syncedOrder();
    h.standIn.state.shop(SHOP)?.scopes.push("write_orders");
    await h.postForm("/settings/claims/tagging", { tagOrders: "on" }, jar);
    // Revoked in Shopify after the connector read the scopes.
    const shop = h.standIn.state.shop(SHOP);
    if (shop) shop.scopes = shop.scopes.filter((s) => s !== "write_orders");
    await control("POST", "/claims", { orderId });
    await expect
      .poll(async () => (await claimsOf())[0]?.tagError ?? null, { timeout: 10_000 })
      .toMatch(/ACCESS_DENIED|Access denied/);
    expect(orderTags()).toBe("");
    expect(await settingsPage()).toContain("order not tagged");

    // The install's own job (nothing waited then) has run: a worker ran, and is stopped now.
    const drain = await h.maintenanceWorker();
    await expect.poll(async () => (await reconnectJobs(["waiting", "active"])).length).toBe(0);
    await drain.close();

    // The merchant grants it again and turns tagging on (the page's advice): the order missed
    // meanwhile is tagged then, not only at its claim's next event, by a job the worker role
    // runs; the page only queues it.
    shop?.scopes.push("write_orders");
    expect((await h.postForm("/settings/claims/tagging", { tagOrders: "on" }, jar)).status).toBe(
      303,
    );
    expect(await reconnectJobs(["waiting"])).toHaveLength(1);
    expect(orderTags()).toBe("");
    await h.maintenanceWorker();
    await taggedOpenAfterAll();
  });
});

/** The web app alone (no provider, no Shopify) on the test Redis and a SQLite file of its own. */
async function bareConnector(extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), "connector-provider-"));
  const env = parseEnv({
    DATABASE_PATH: join(dir, "c.sqlite"),
    SHOPIFY_API_SECRET: "s",
    LOG_LEVEL: "silent",
    ...extra,
  });
  const ctx = createConnector({
    config: resolveRuntimeConfig(env),
    logger: createLogger("silent"),
    redis: service("redisUrl"),
    prefix: `t-${randomUUID()}`,
    providerDefaults: { baseUrl: BARE_BASE, authUrl: "http://127.0.0.1:9", audience: "a" },
  });
  const web = composeWebApp(ctx);
  cleanups.push(async () => {
    await web.close();
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await ctx.ready();
  return { ctx, web };
}
const BARE_BASE = "http://127.0.0.1:9/v1";

describe("several provider accounts on one store", () => {
  it("accepts a delivery any account's secret verifies, for that account's shops", async () => {
    const { ctx, web } = await bareConnector();
    const secrets = { c1: "whsec_account_one_0001", c2: "whsec_account_two_0002" };
    for (const [shop, clientId] of [
      ["one.myshopify.com", "c1"],
      ["two.myshopify.com", "c2"],
    ] as const) {
      await ctx.shops.upsertShop(shop, { storeId: 1001, providerClientId: clientId });
      await ctx.webhookSecrets.set(
        { providerBaseUrl: BARE_BASE, clientId },
        ctx.secrets.seal(secrets[clientId], sealedFor.providerWebhookSecret(BARE_BASE, clientId)),
      );
    }
    const send = (id: string, signature: string, body: string) =>
      web.app.request("/webhooks/provider", {
        method: "POST",
        headers: {
          "x-webhook-id": id,
          "x-webhook-topic": "registration/created",
          "x-store-id": "1001",
          "x-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "x-webhook-signature": signature,
        },
        body,
      });
    // Three registrations (one body is one event: the same bytes again would be a duplicate).
    const [body, second, third] = [1, 2, 3].map((registrationId) =>
      JSON.stringify({ storeId: 1001, registrationId }),
    ) as [string, string, string];
    expect((await send("by-two", signProviderBody(secrets.c2, body), body)).status).toBe(200);
    expect((await send("by-one", signProviderBody(secrets.c1, second), second)).status).toBe(200);
    const both = `${signProviderBody(secrets.c1, third)},${signProviderBody(secrets.c2, third)}`;
    expect((await send("by-both", both, third)).status).toBe(200);
    const bad = await send("by-none", signProviderBody("whsec_someone_else_000", body), body);
    expect(bad.status).toBe(401);
    const shopsOf = async (id: string) =>
      (await ctx.providerEvents.recent({ providerBaseUrl: BARE_BASE, storeId: 1001 })).find(
        (e) => e.eventId === id,
      )?.shops;
    expect(await shopsOf("by-two")).toEqual(["two.myshopify.com"]);
    expect(await shopsOf("by-one")).toEqual(["one.myshopify.com"]);
    expect(await shopsOf("by-both")).toEqual(["one.myshopify.com", "two.myshopify.com"]);
    expect(await shopsOf("by-none")).toBeUndefined();
  });
});

describe("the provider's webhooks: size", () => {
  it("refuses a body over WEBHOOK_MAX_BYTES (413) from its Content-Length, storing nothing", async () => {
    const { ctx, web } = await bareConnector({ WEBHOOK_MAX_BYTES: "1024" });
    const body = JSON.stringify({ claimId: 1, padding: "x".repeat(2_000) });
    const res = await web.app.request("/webhooks/provider", {
      method: "POST",
      headers: {
        "content-length": String(Buffer.byteLength(body)),
        "x-store-id": "1001",
        "x-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "x-webhook-signature": signProviderBody(WEBHOOK_SECRET, body),
      },
      body,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ error: { code: "payload_too_large" } });
    expect(await ctx.providerEvents.unprocessed(10)).toEqual([]);
  });
});

describe("the provider's webhooks while Postgres takes no writes", () => {
  it("answer 503 and log the failure without the event's body (customer data)", async () => {
    // A Postgres that reads but takes no write, as a primary demoted in a failover answers
    // until the connector reaches the new one: the event's insert fails. drizzle's error says
    // "Failed query: insert into provider_events … params: <every value>", the body among them,
    // and that message was logged whole.
    const postgres = await startPostgres();
    const url = await postgres.createDatabase("provider_events_read_only");
    const redis = await startRedisServer();
    const captured = captureLogs("provider-events-read-only");
    const env = parseEnv({ DATABASE_URL: url, SHOPIFY_API_SECRET: "s", LOG_LEVEL: "info" });
    const baseUrl = "http://127.0.0.1:9/v1";
    const ctx = createConnector({
      config: resolveRuntimeConfig(env),
      logger: createLogger("info", captured.destination),
      redis: redis.url,
      prefix: `t-${randomUUID()}`,
      providerDefaults: { baseUrl, authUrl: "http://127.0.0.1:9", audience: "a" },
    });
    const web = composeWebApp(ctx);
    cleanups.push(async () => {
      await web.close().catch(() => {});
      await ctx.close().catch(() => {});
      await redis.stop();
      await postgres.stop();
      captured.remove();
    });
    await shopWithWebhookSecret(ctx, baseUrl);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const database = new URL(url).pathname.slice(1);
    await admin.query(`ALTER DATABASE "${database}" SET default_transaction_read_only = on`);
    // The connector's connections take the setting when they connect again.
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [database],
    );
    await admin.end();

    const email = "private.person@example.com";
    const body = JSON.stringify({
      storeId: 1001,
      registrationId: "r1",
      customerEmail: email,
      customerName: "Private Person",
    });
    const post = () =>
      web.app.request("/webhooks/provider", {
        method: "POST",
        headers: {
          "x-webhook-id": "e-read-only",
          "x-webhook-topic": "registration/created",
          "x-store-id": "1001",
          "x-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "x-webhook-signature": signProviderBody(WEBHOOK_SECRET, body),
        },
        body,
      });
    // A connection the server ended may fail one request first; the insert is what is waited for
    // (its line said "insert into" before, and says the database's words now).
    await expect
      .poll(async () => {
        await post();
        return /insert into|read-only transaction/.test(captured.read());
      })
      .toBe(true);
    const lines = captured.read();
    expect(lines).not.toContain(email);
    expect(lines).toMatch(
      /"message":"cannot execute INSERT in a read-only transaction"[^}]*\},"msg":"could not make the provider event durable; answering 503"/,
    );
    expect(lines).not.toContain("Private Person");
  }, 60_000);
});

describe("the provider's webhooks while Redis is down", () => {
  it("answer 503 so the provider retries, and the retry queues the stored event", async () => {
    const redis = await startRedisServer();
    const dir = mkdtempSync(join(tmpdir(), "connector-provider-events-"));
    const env = parseEnv({
      DATABASE_PATH: join(dir, "c.sqlite"),
      SHOPIFY_API_SECRET: "s",
      LOG_LEVEL: "silent",
    });
    const baseUrl = "http://127.0.0.1:9/v1";
    const ctx = createConnector({
      config: resolveRuntimeConfig(env),
      logger: createLogger("silent"),
      redis: redis.url,
      prefix: `t-${randomUUID()}`,
      providerDefaults: { baseUrl, authUrl: "http://127.0.0.1:9", audience: "a" },
    });
    const web = composeWebApp(ctx);
    let back: Awaited<ReturnType<typeof startRedisServer>> | undefined;
    cleanups.push(async () => {
      await web.close().catch(() => {});
      await ctx.close().catch(() => {});
      await back?.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    await shopWithWebhookSecret(ctx, baseUrl);
    const post = (id: string) => {
      const body = JSON.stringify({ storeId: 1001, claimId: id, status: "open" });
      return web.app.request("/webhooks/provider", {
        method: "POST",
        headers: {
          "x-webhook-id": id,
          "x-webhook-topic": "claim/created",
          "x-store-id": "1001",
          "x-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
          "x-webhook-signature": signProviderBody(WEBHOOK_SECRET, body),
        },
        body,
      });
    };
    expect((await post("e1")).status).toBe(200);
    await redis.stop("SIGKILL");
    const down = await post("e2");
    expect(down.status).toBe(503);
    expect(down.headers.get("retry-after")).toBe("5");
    expect(await down.json()).toMatchObject({ error: { code: "unavailable" } });

    back = await startRedisServer({ port: redis.port });
    await new Promise<void>((resolve) => {
      if (ctx.ingestRedis.status === "ready") resolve();
      else ctx.ingestRedis.once("ready", () => resolve());
    });
    // The provider's retry: the event was stored before Redis failed; now it is queued.
    const retried = await post("e2");
    expect(retried.status).toBe(200);
    expect(await retried.json()).toEqual({ ok: true, outcome: "requeued" });
    const queue = new ProviderEventQueue(ctx.redis, ctx.prefix);
    cleanups.push(() => queue.close());
    const rows = await ctx.providerEvents.recent({ providerBaseUrl: baseUrl, storeId: 1001 });
    const e2 = rows.find((r) => r.eventId === "e2");
    expect(await queue.queue.getJob(`provider-event-${e2?.id}`)).toBeTruthy();
  });
});
