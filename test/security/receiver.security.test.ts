import { createHmac, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { scanLogs } from "../helpers/log-scan.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, SHOPIFY_SECRET, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const MAX_BYTES = 64 * 1024;
const logs = captureLogs("receiver-security");
let pipeline: Pipeline;
beforeAll(async () => {
  pipeline = await startPipeline({
    env: { WEBHOOK_MAX_BYTES: String(MAX_BYTES) },
    logDestination: logs.destination,
  });
});
afterAll(async () => {
  await pipeline.close();
  logs.remove();
});

let seq = 0;
const validOrder = () => {
  seq++;
  const model = newModelOrder(5_000 + seq, 5_000_000 + seq * 10);
  model.email = `receiver.buyer${seq}@example.com`;
  return { model, body: JSON.stringify(orderPayload(model)) };
};

const post = (headers: Record<string, string>, body: string) =>
  pipeline.web.app.request("/webhooks/shopify", { method: "POST", headers, body });

interface Answer {
  outcome?: string;
  error?: { code: string; fields?: { path: string }[] };
}
const read = async (response: Response) => (await response.json()) as Answer;

const signed = (
  body: string,
  o: { topic?: string; shop?: string; secret?: string; id?: string } = {},
) =>
  signWebhook({
    topic: o.topic ?? "orders/create",
    shop: o.shop ?? TEST_SHOP,
    body,
    secret: o.secret ?? SHOPIFY_SECRET,
    ...(o.id ? { webhookId: o.id, eventId: o.id } : {}),
  });

/** Nothing stored: no sync job, no snapshot-driven work, no dead letter. */
async function nothingStored() {
  expect(await pipeline.ctx.queues.sync.count()).toBe(0);
  expect(await pipeline.ctx.queues.deadLetter.count()).toBe(0);
}

describe("receiver: the signature", () => {
  it("answers 401 without the HMAC header and stores nothing", async () => {
    const { body } = validOrder();
    const { "x-shopify-hmac-sha256": _drop, ...headers } = signed(body).headers;
    const response = await post(headers, body);
    expect(response.status).toBe(401);
    expect((await read(response)).error?.code).toBe("missing_hmac");
    await nothingStored();
  });

  it("answers 401 to an HMAC that is not the body's (garbage, empty, other body)", async () => {
    const { body } = validOrder();
    const headers = signed(body).headers;
    for (const hmac of ["", "not-base64!", "AAAA", signed("{}").headers["x-shopify-hmac-sha256"]]) {
      const response = await post({ ...headers, "x-shopify-hmac-sha256": hmac as string }, body);
      expect(response.status).toBe(401);
    }
    await nothingStored();
  });

  it("answers 401 to a body signed with another app's secret", async () => {
    const { body } = validOrder();
    const response = await post(signed(body, { secret: "another-apps-secret" }).headers, body);
    expect(response.status).toBe(401);
    expect((await read(response)).error?.code).toBe("invalid_hmac");
    await nothingStored();
  });

  it("answers 401 to a truncated body (signature of the whole) and to one with a byte changed", async () => {
    const { body } = validOrder();
    const { headers } = signed(body);
    expect((await post(headers, body.slice(0, body.length - 10))).status).toBe(401);
    expect((await post(headers, body.replace('"USD"', '"EUR"'))).status).toBe(401);
    await nothingStored();
  });

  it("rejects an HMAC that differs only in its last or only in its first character", async () => {
    const { body } = validOrder();
    const { headers } = signed(body);
    const hmac = headers["x-shopify-hmac-sha256"] as string;
    const flip = (c: string) => (c === "A" ? "B" : "A");
    const lastOff = hmac.slice(0, -2) + flip(hmac.at(-2) as string) + hmac.at(-1);
    const firstOff = flip(hmac[0] as string) + hmac.slice(1);
    expect((await post({ ...headers, "x-shopify-hmac-sha256": lastOff }, body)).status).toBe(401);
    expect((await post({ ...headers, "x-shopify-hmac-sha256": firstOff }, body)).status).toBe(401);
    await nothingStored();
  });
});

describe("receiver: the body", () => {
  it("answers 413 to a body one byte over the limit, and accepts one at the limit", async () => {
    const { model } = validOrder();
    const base = JSON.stringify({ ...orderPayload(model), note: "" });
    const fill = (n: number) =>
      JSON.stringify({ ...orderPayload(model), note: "x".repeat(n - base.length) });
    const atLimit = fill(MAX_BYTES);
    const over = fill(MAX_BYTES + 1);
    expect(Buffer.byteLength(atLimit)).toBe(MAX_BYTES);
    expect((await post(signed(over).headers, over)).status).toBe(413);
    expect((await post(signed(atLimit).headers, atLimit)).status).toBe(200);
    await pipeline.drain();
  });

  it("keeps a validly signed body that is not JSON in the dead-letter queue, with the reason", async () => {
    const body = '{"id": 123, "line_items": [';
    const id = randomUUID();
    const response = await post(signed(body, { id }).headers, body);
    expect(response.status).toBe(200);
    expect((await read(response)).outcome).toBe("dead-lettered");
    const dead = (await pipeline.ctx.queues.deadLetter.getJobs(["waiting"])).find(
      (j) => j.data.rawPayload === body,
    );
    expect(dead?.data.category).toBe("payload");
    expect(dead?.data.reason).toMatch(/could not be used/);
    await dead?.remove();
  });

  it("answers 200 to a topic it does not subscribe to, and queues nothing", async () => {
    const body = JSON.stringify({ id: 1, title: "A product" });
    const response = await post(signed(body, { topic: "products/create" }).headers, body);
    expect(response.status).toBe(200);
    expect((await read(response)).outcome).toBe("ignored");
    await nothingStored();
  });

  it("answers 200 to a shop that is not installed and stores nothing for it", async () => {
    const { body } = validOrder();
    const response = await post(signed(body, { shop: "stranger.myshopify.com" }).headers, body);
    expect(response.status).toBe(200);
    expect((await read(response)).outcome).toBe("unknown-shop");
    await nothingStored();
  });

  it("answers 400 naming the header when the shop domain is not a myshopify.com domain", async () => {
    const { body } = validOrder();
    for (const shop of ["evil.example.com", "../../etc/passwd", "a.myshopify.com.evil.io"]) {
      const response = await post(signed(body, { shop }).headers, body);
      expect(response.status).toBe(400);
      const error = (await read(response)).error;
      expect(error?.fields?.[0]?.path).toBe("headers.x-shopify-shop-domain");
    }
    await nothingStored();
  });

  it("takes a header a proxy sent twice with one value; refuses copies that differ (400)", async () => {
    const { model, body } = validOrder();
    const twice = new Headers(signed(body).headers);
    for (const [name, value] of [...twice]) {
      if (name.startsWith("x-shopify-")) twice.append(name, value);
    }
    const taken = await pipeline.web.app.request("/webhooks/shopify", {
      method: "POST",
      headers: twice,
      body,
    });
    expect(taken.status).toBe(200);
    expect((await read(taken)).outcome).toBe("queued");
    await pipeline.drain();
    expect(
      pipeline.sandbox.state.orders.all.filter((o) => o.sourceOrderId === String(model.id)),
    ).toHaveLength(1);

    const other = validOrder();
    const differ = new Headers(signed(other.body).headers);
    differ.append("X-Shopify-Topic", "orders/cancelled");
    const refused = await pipeline.web.app.request("/webhooks/shopify", {
      method: "POST",
      headers: differ,
      body: other.body,
    });
    expect(refused.status).toBe(400);
    expect((await read(refused)).error).toEqual({
      code: "conflicting_headers",
      message: "a Shopify webhook header was sent more than once, with different values",
      fields: [
        {
          path: "headers.x-shopify-topic",
          message: "sent more than once, with different values",
        },
      ],
    });
    await nothingStored();
  });

  it("answers a replayed event 200 as a duplicate and syncs it once", async () => {
    const { model, body } = validOrder();
    const { headers } = signed(body, { id: `replay-${randomUUID()}` });
    const first = await read(await post(headers, body));
    await pipeline.drain();
    const replays = await Promise.all(
      Array.from({ length: 5 }, async () => read(await post(headers, body))),
    );
    await pipeline.drain();
    expect(first.outcome).toBe("queued");
    expect(replays.map((r) => r.outcome)).toEqual(Array(5).fill("duplicate"));
    const orders = pipeline.sandbox.state.orders.all.filter(
      (o) => o.sourceOrderId === String(model.id),
    );
    expect(orders).toHaveLength(1);
    const creates = pipeline.sandbox.state.arrivals.filter(
      (a) => a.method === "POST" && a.path === "/v1/orders" && a.status === 201,
    );
    expect(creates.length).toBe(pipeline.sandbox.state.orders.all.length);
  });
});

describe("receiver logs", () => {
  it("hold no email, phone, token or secret of the requests above", () => {
    const text = logs.read();
    expect(text.length).toBeGreaterThan(0);
    const leaks = scanLogs(
      [{ source: "receiver-security", text }],
      [
        { kind: "shopify secret", value: SHOPIFY_SECRET },
        { kind: "provider secret", value: pipeline.sandbox.clientSecret },
        { kind: "phone", value: "555-0100" },
        { kind: "hmac", value: createHmac("sha256", SHOPIFY_SECRET).update("{}").digest("base64") },
      ],
    );
    expect(leaks).toEqual([]);
  });
});
