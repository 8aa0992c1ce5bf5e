import { createHmac } from "node:crypto";
import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import { type ServerType, serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";

/**
 * The sandbox's outbound webhooks, seen by a bare receiver: what each delivery carries, how a
 * refused one is retried, and what the control API refuses.
 */
const SECRET = "whsec_sandbox_events_0123";

let sandbox: SandboxHandle | undefined;
let server: ServerType | undefined;
afterEach(async () => {
  await sandbox?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  sandbox = undefined;
  server = undefined;
});

interface Received {
  headers: Record<string, string>;
  body: string;
}

/** A receiver that answers the given statuses in turn (then 200), recording every request. */
async function receiver(statuses: number[] = []) {
  const received: Received[] = [];
  const app = new Hono();
  app.post("/hook", async (c) => {
    received.push({ headers: Object.fromEntries(c.req.raw.headers), body: await c.req.text() });
    const status = statuses.shift() ?? 200;
    return c.json({ n: received.length }, status as 200);
  });
  const port = await new Promise<number>((resolve) => {
    server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) =>
      resolve(info.port),
    );
  });
  return { url: `http://127.0.0.1:${port}/hook`, received };
}

async function control(method: string, path: string, body?: unknown) {
  const res = await fetch(`${sandbox?.authUrl}/_sandbox${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: read field by field
  return { status: res.status, body: (await res.json()) as any };
}

describe("the sandbox's outbound webhooks", () => {
  it("sends the claim itself with the documented headers and an HMAC of the raw body", async () => {
    const hook = await receiver();
    sandbox = await startSandbox({ control: true, stores: [1001] });
    expect((await control("PUT", "/webhooks", { url: hook.url, secret: SECRET })).status).toBe(200);
    const opened = await control("POST", "/claims", { sourceOrderId: "7001", status: "open" });
    expect(opened.status).toBe(201);
    expect(opened.body.delivery).toMatchObject({ status: 200, state: "delivered" });
    const [delivery] = hook.received;
    if (!delivery) throw new Error("nothing delivered");
    expect(JSON.parse(delivery.body)).toEqual(opened.body.claim);
    expect(opened.body.claim).toMatchObject({
      storeId: 1001,
      claimId: 5001,
      externalId: "CLM-5001",
      resolutionSummary: { giftCards: [] },
      sourceOrderId: "7001",
    });
    expect(delivery.headers).toMatchObject({
      "x-webhook-id": opened.body.delivery.webhookId,
      "x-webhook-topic": "claim/created",
      "x-api-version": "v1",
      "x-store-id": "1001",
    });
    const sent = Number(delivery.headers["x-webhook-timestamp"]);
    expect(Math.abs(sent - Date.now() / 1000)).toBeLessThan(5);
    expect(delivery.headers["x-webhook-signature"]).toBe(
      `sha256=${createHmac("sha256", SECRET).update(delivery.body).digest("hex")}`,
    );

    const changed = await control("POST", "/claims/5001", { status: "closed" });
    expect(changed.body.delivery.topic).toBe("claim/closed");
    expect(JSON.parse(hook.received[1]?.body ?? "{}").updatedOn > opened.body.claim.updatedOn).toBe(
      true,
    );
  });

  it("retries a delivery that is not answered 2xx, with the same ID and growing waits", async () => {
    const hook = await receiver([500, 401]);
    sandbox = await startSandbox({
      control: true,
      webhooks: { url: hook.url, secret: SECRET, backoffMs: 100, maxAttempts: 4 },
    });
    const sent = await control("POST", "/webhooks/send", {
      topic: "claim/updated",
      body: { claimId: 1 },
    });
    expect(sent.body.delivery).toMatchObject({ status: 500, state: "sending" });
    await expect.poll(() => hook.received.length, { timeout: 5_000 }).toBe(3);
    const ids = new Set(hook.received.map((r) => r.headers["x-webhook-id"]));
    expect(ids.size).toBe(1);
    const { body } = await control("GET", "/webhooks/deliveries");
    const [record] = body.deliveries;
    expect(record.state).toBe("delivered");
    expect(record.attempts.map((a: { status: number }) => a.status)).toEqual([500, 401, 200]);
    const [a, b, c] = record.attempts.map((x: { at: string }) => Date.parse(x.at));
    expect(b - a).toBeGreaterThanOrEqual(90);
    expect(c - b).toBeGreaterThanOrEqual(190);
  });

  it("stops after the last attempt, and sends held, replayed and badly signed events on request", async () => {
    const hook = await receiver([500, 500, 500]);
    sandbox = await startSandbox({
      control: true,
      webhooks: { url: hook.url, secret: SECRET, backoffMs: 10, maxAttempts: 2 },
    });
    const failing = await control("POST", "/webhooks/send", { topic: "x/y", body: {} });
    await expect
      .poll(async () => (await control("GET", "/webhooks/deliveries")).body.deliveries[0].state)
      .toBe("failed");
    expect(hook.received).toHaveLength(2);

    const held = await control("POST", "/webhooks/registrations", {
      delivery: { hold: true, retry: false },
    });
    expect(held.body.delivery).toMatchObject({ state: "held", status: null });
    expect(hook.received).toHaveLength(2);
    const released = await control("POST", "/webhooks/release", {
      webhookId: held.body.delivery.webhookId,
    });
    expect(released.body.delivery.status).toBe(500);
    expect(hook.received[2]?.headers["x-webhook-topic"]).toBe("registration/created");
    expect(JSON.parse(hook.received[2]?.body ?? "{}")).toMatchObject({
      registrationId: held.body.registration.registrationId,
      storeId: 1001,
    });

    const replayed = await control("POST", "/webhooks/replay", {
      webhookId: failing.body.delivery.webhookId,
      delivery: { signature: "none", retry: false },
    });
    expect(replayed.body.delivery.status).toBe(200);
    const last = hook.received.at(-1);
    expect(last?.headers["x-webhook-id"]).toBe(failing.body.delivery.webhookId);
    expect(last?.headers["x-webhook-signature"]).toBeUndefined();

    await control("POST", "/webhooks/send", {
      topic: "claim/created",
      body: { claimId: 2 },
      delivery: { signature: "bad", timestamp: "1" },
    });
    const bad = hook.received.at(-1);
    expect(bad?.headers["x-webhook-timestamp"]).toBe("1");
    expect(bad?.headers["x-webhook-signature"]).not.toBe(
      `sha256=${createHmac("sha256", SECRET)
        .update(bad?.body ?? "")
        .digest("hex")}`,
    );
  });

  it("refuses bad control calls with the reason", async () => {
    sandbox = await startSandbox({ control: true, stores: [1001] });
    expect((await control("PUT", "/webhooks", { url: "not a url", secret: "s" })).status).toBe(400);
    expect((await control("POST", "/claims", { status: "Not A Word" })).status).toBe(400);
    const missing = await control("POST", "/claims", { orderId: 99 });
    expect(missing).toEqual({ status: 404, body: { error: "store 1001 has no order 99" } });
    expect((await control("POST", "/claims/1", { status: "open" })).status).toBe(404);
    expect((await control("POST", "/webhooks/replay", { webhookId: "nope" })).status).toBe(404);
    // Without a subscriber the event is recorded as failed, with the fix.
    const unsent = await control("POST", "/claims", {});
    expect(unsent.body.delivery).toMatchObject({
      state: "failed",
      status: "error",
      answer: "no subscriber configured (PUT /_sandbox/webhooks)",
    });
  });
});
