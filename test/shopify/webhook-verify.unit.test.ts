import { createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createShopifyApi } from "../../src/shopify/api.ts";
import { verifyShopifyWebhook } from "../../src/shopify/webhook-verify.ts";

const SECRET = "app-secret";
const shopify = createShopifyApi({
  apiKey: "key",
  apiSecretKey: SECRET,
  appUrl: "https://connector.example",
  apiVersion: "2026-10",
});

const sign = (body: string, secret = SECRET) =>
  createHmac("sha256", secret).update(body).digest("base64");

const CLASSIC = {
  hmac: "X-Shopify-Hmac-Sha256",
  topic: "X-Shopify-Topic",
  domain: "X-Shopify-Shop-Domain",
  apiVersion: "X-Shopify-API-Version",
  webhookId: "X-Shopify-Webhook-Id",
};
const EVENTS = {
  hmac: "shopify-hmac-sha256",
  topic: "shopify-topic",
  domain: "shopify-shop-domain",
  apiVersion: "shopify-api-version",
  webhookId: "shopify-webhook-id",
};

/** One delivery as a test case: which headers are sent, and how the signature is made. */
const delivery = fc.record({
  body: fc.oneof(fc.json(), fc.string({ unit: "grapheme" }), fc.constant("")),
  family: fc.constantFrom(CLASSIC, EVENTS),
  signature: fc.constantFrom("right", "wrong-secret", "tampered", "garbage", "absent"),
  drop: fc.subarray(["topic", "domain", "apiVersion", "webhookId"] as const),
  upperCase: fc.boolean(),
});

type Delivery = typeof delivery extends fc.Arbitrary<infer T> ? T : never;

function requestOf(c: Delivery) {
  const headers = new Headers({ "content-type": "application/json" });
  const set = (name: string, value: string) =>
    headers.set(c.upperCase ? name.toUpperCase() : name, value);
  const signatures: Record<string, string | null> = {
    right: sign(c.body),
    "wrong-secret": sign(c.body, "another-secret"),
    tampered: sign(`${c.body} `),
    garbage: "not-base64-at-all!",
    absent: null,
  };
  const signature = signatures[c.signature];
  if (signature) set(c.family.hmac, signature);
  const values = {
    topic: "orders/create",
    domain: "a-shop.myshopify.com",
    apiVersion: "2026-10",
    webhookId: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
  };
  for (const key of Object.keys(values) as (keyof typeof values)[]) {
    if (!c.drop.includes(key)) set(c.family[key], values[key]);
  }
  return new Request("https://connector.example/webhooks/shopify", {
    method: "POST",
    headers,
    body: c.body,
  });
}

describe("verifyShopifyWebhook", () => {
  it("agrees with @shopify/shopify-api's webhooks.validate on every delivery", async () => {
    await fc.assert(
      fc.asyncProperty(delivery, async (c) => {
        const request = requestOf(c);
        const ours = verifyShopifyWebhook(
          request.headers,
          new TextEncoder().encode(c.body),
          SECRET,
        );
        const theirs = await shopify.webhooks.validate({
          rawBody: c.body,
          rawRequest: request.clone(),
        });
        expect(ours.valid).toBe(theirs.valid);
        if (ours.valid && theirs.valid) {
          expect(ours.domain).toBe(theirs.domain);
          expect(ours.webhookId).toBe(theirs.webhookId);
          expect(ours.apiVersion).toBe(theirs.apiVersion);
          // The library stores topics as ORDERS_CREATE; the receiver normalizes either.
          expect(ours.topic.toUpperCase().replace("/", "_")).toBe(theirs.topic);
        } else if (!ours.valid && !theirs.valid) {
          expect(ours.reason).toBe(theirs.reason);
          if (ours.reason === "missing_headers" && "missingHeaders" in theirs) {
            expect(ours.missingHeaders).toEqual(theirs.missingHeaders);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("verifies the bytes as sent, including bytes that are not valid UTF-8", () => {
    const bytes = new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]);
    const headers = new Headers({
      "X-Shopify-Hmac-Sha256": createHmac("sha256", SECRET).update(bytes).digest("base64"),
      "X-Shopify-Topic": "orders/create",
      "X-Shopify-Shop-Domain": "a-shop.myshopify.com",
      "X-Shopify-API-Version": "2026-10",
      "X-Shopify-Webhook-Id": "w-1",
    });
    expect(verifyShopifyWebhook(headers, bytes, SECRET).valid).toBe(true);
    // Decoding and re-encoding replaces the invalid bytes: the signature no longer matches.
    const reencoded = new TextEncoder().encode(new TextDecoder().decode(bytes));
    expect(verifyShopifyWebhook(headers, reencoded, SECRET)).toEqual({
      valid: false,
      reason: "invalid_hmac",
    });
  });

  it("reads the event id and trigger time of classic deliveries", () => {
    const body = new TextEncoder().encode('{"id":1}');
    const headers = new Headers({
      "x-shopify-hmac-sha256": createHmac("sha256", SECRET).update(body).digest("base64"),
      "x-shopify-topic": "orders/updated",
      "x-shopify-shop-domain": "a-shop.myshopify.com",
      "x-shopify-api-version": "2026-10",
      "x-shopify-webhook-id": "w-2",
      "x-shopify-event-id": "e-9",
      "x-shopify-triggered-at": "2026-11-23T10:00:00.000Z",
    });
    expect(verifyShopifyWebhook(headers, body, SECRET)).toMatchObject({
      valid: true,
      topic: "orders/updated",
      eventId: "e-9",
      triggeredAt: "2026-11-23T10:00:00.000Z",
    });
  });

  it("reads a header sent twice with one value as that value, and refuses copies that differ", () => {
    const body = new TextEncoder().encode('{"id":1}');
    const hmac = createHmac("sha256", SECRET).update(body).digest("base64");
    const headers = () =>
      new Headers({
        "x-shopify-hmac-sha256": hmac,
        "x-shopify-topic": "orders/updated",
        "x-shopify-shop-domain": "a-shop.myshopify.com",
        "x-shopify-api-version": "2026-10",
        "x-shopify-webhook-id": "w-3",
        "x-shopify-event-id": "e-3",
      });
    const twice = headers();
    for (const [name, value] of headers()) twice.append(name, value);
    expect(verifyShopifyWebhook(twice, body, SECRET)).toEqual({
      valid: true,
      topic: "orders/updated",
      domain: "a-shop.myshopify.com",
      apiVersion: "2026-10",
      webhookId: "w-3",
      eventId: "e-3",
      triggeredAt: null,
    });
    const differ = headers();
    differ.append("X-Shopify-Topic", "app/uninstalled");
    differ.append("X-Shopify-Event-Id", "e-4");
    expect(verifyShopifyWebhook(differ, body, SECRET)).toEqual({
      valid: false,
      reason: "conflicting_headers",
      conflictingHeaders: ["X-Shopify-Topic", "X-Shopify-Event-Id"],
    });
    const twoSignatures = headers();
    twoSignatures.append("X-Shopify-Hmac-Sha256", createHmac("sha256", "other").digest("base64"));
    expect(verifyShopifyWebhook(twoSignatures, body, SECRET)).toEqual({
      valid: false,
      reason: "conflicting_headers",
      conflictingHeaders: ["X-Shopify-Hmac-Sha256"],
    });
  });
});
