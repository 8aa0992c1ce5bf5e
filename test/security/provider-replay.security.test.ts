import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { ProviderEventWorkerHandle } from "../../src/jobs/provider-event-worker.ts";
import { signProviderBody } from "../../src/provider/webhook-verify.ts";
import {
  type CookieJar,
  type InstallHarness,
  providerEventWorker,
  startInstallHarness,
} from "../helpers/install-harness.ts";

/**
 * The provider's documented signature covers the raw body only: `X-Webhook-Id`,
 * `X-Webhook-Timestamp` and `X-Store-Id` can be changed at will by whoever captured a delivery.
 * A replay must not be processed twice, must not make an older status win, and must not reach
 * another store's shops.
 */
const SHOP = "replay-shop.myshopify.com";
const PROVIDER = { clientId: "replay-client", clientSecret: "replay-secret-8e1f" };
const WEBHOOK_SECRET = "whsec_replay_test_5b7c2d";

let h: InstallHarness;
let jar: CookieJar;
let worker: ProviderEventWorkerHandle | undefined;

afterEach(async () => {
  await worker?.close();
  worker = undefined;
  await h?.close();
});

/** The shop on store 1001 of an account that also has store 1002, its webhook secret saved. */
async function start() {
  h = await startInstallHarness({
    workers: true,
    provider: { ...PROVIDER, stores: [1001, 1002], control: true },
  });
  ({ jar } = await h.install(SHOP));
  await h.connect(jar, PROVIDER, 1001);
  const saved = await h.postForm("/settings/claims/secret", { webhookSecret: WEBHOOK_SECRET }, jar);
  expect(saved.status).toBe(303);
  worker = await providerEventWorker(h);
}

/** A delivery as the provider sends it; every header is the sender's choice but the signature. */
async function deliver(
  body: string,
  headers: { id?: string; storeId?: string; topic?: string; timestamp?: number } = {},
) {
  const res = await fetch(`${h.appUrl}/webhooks/provider`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-webhook-id": headers.id ?? randomUUID(),
      "x-webhook-topic": headers.topic ?? "claim/updated",
      "x-api-version": "v1",
      "x-store-id": headers.storeId ?? "1001",
      "x-webhook-timestamp": String(headers.timestamp ?? Math.floor(Date.now() / 1000)),
      "x-webhook-signature": signProviderBody(WEBHOOK_SECRET, body),
    },
    body,
  });
  // biome-ignore lint/suspicious/noExplicitAny: the answer is read field by field
  return { status: res.status, body: (await res.json()) as any };
}

const events = () =>
  h.ctx.providerEvents.recent({ providerBaseUrl: h.provider.url, storeId: 1001 });
const claimsOf = () => h.ctx.claims.listForShop(SHOP);
/** Every stored event processed (the worker marks each after applying it). */
const allProcessed = async () => (await events()).every((e) => e.processedAt !== null);

describe("replayed provider deliveries", () => {
  it("refuses a body about store 1002 sent with X-Store-Id 1001, naming body.storeId", async () => {
    await start();
    const body = JSON.stringify({
      storeId: 1002,
      claimId: 4242,
      externalId: "CLM-4242",
      resolutionSummary: { giftCards: [] },
      status: "open",
      updatedOn: new Date().toISOString(),
    });
    const answer = await deliver(body, { storeId: "1001", topic: "claim/created" });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: "store_mismatch",
      fields: [{ path: "body.storeId", message: "must be X-Store-Id (1001)" }],
    });
    // A claim body naming no store cannot be routed by the header alone either.
    const storeless = await deliver(JSON.stringify({ claimId: 4243, status: "open" }));
    expect(storeless.status).toBe(400);
    expect(storeless.body.error.fields).toEqual([{ path: "body.storeId", message: "required" }]);
    expect(await events()).toEqual([]);
    expect(await claimsOf()).toEqual([]);
    // The same body under its own store's header is the other store's business, not refused.
    const own = await deliver(body, { storeId: "1002" });
    expect(own.status).toBe(401);
    expect(own.body.error.code).toBe("unknown_store");
  });

  it("processes a captured claim once when it is re-sent with a new ID, topic and timestamp", async () => {
    await start();
    const updatedOn = new Date(Date.now() - 60_000).toISOString();
    const claim = { storeId: 1001, claimId: 5150, externalId: "CLM-5150", updatedOn };
    const body = JSON.stringify({ ...claim, status: "open" });
    expect((await deliver(body, { id: "evt-1", topic: "claim/created" })).body.outcome).toBe(
      "queued",
    );
    await expect.poll(allProcessed, { timeout: 10_000 }).toBe(true);

    // The same bytes, fresh headers: a duplicate of the first event.
    const replay = await deliver(body, { id: "evt-replayed", topic: "claim/closed" });
    expect(replay).toEqual({ status: 200, body: { ok: true, outcome: "duplicate" } });
    // The same state re-encoded (other bytes, same claim and updatedOn): the same event.
    const reencoded = JSON.stringify({ status: "open", ...claim }, null, 1);
    expect((await deliver(reencoded, { id: "evt-reencoded" })).body.outcome).toBe("duplicate");

    const stored = await events();
    expect(stored.map((e) => e.eventId)).toEqual(["evt-1"]);
    expect(await claimsOf()).toMatchObject([{ claimId: "5150", status: "open" }]);
  });

  it("never lets a fresh timestamp header make an older status without updatedOn win", async () => {
    await start();
    const older = JSON.stringify({ storeId: 1001, claimId: 6160, status: "open" });
    const newer = JSON.stringify({ storeId: 1001, claimId: 6160, status: "closed" });
    const now = Math.floor(Date.now() / 1000);
    await deliver(older, { id: "evt-open", timestamp: now });
    await expect.poll(async () => (await claimsOf())[0]?.status, { timeout: 10_000 }).toBe("open");
    // The next status, its timestamp header set back four minutes (within the 5-minute window):
    // without updatedOn, the order of arrival decides, not a header anyone can write.
    await deliver(newer, { id: "evt-closed", timestamp: now - 240 });
    await expect
      .poll(async () => (await claimsOf())[0]?.status, { timeout: 10_000 })
      .toBe("closed");
    await expect.poll(allProcessed, { timeout: 10_000 }).toBe(true);

    // The captured older body, re-sent later with a new ID and the newest timestamp of all.
    const replay = await deliver(older, { id: "evt-open-again", timestamp: now });
    expect(replay.body.outcome).toBe("duplicate");
    await expect.poll(allProcessed, { timeout: 10_000 }).toBe(true);
    expect((await events()).map((e) => e.eventId).sort()).toEqual(["evt-closed", "evt-open"]);
    expect((await claimsOf())[0]?.status).toBe("closed");
  });
});
