import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { classifyTopic, readClaim, unwrapEvent } from "../../src/provider/events.ts";
import {
  isFresh,
  parseSignatures,
  parseTimestamp,
  readDeliveryHeaders,
  signatureMatches,
} from "../../src/provider/webhook-verify.ts";

const SECRET = "whsec_unit_0123456789";
const BODY = Buffer.from('{"claimId":1}');
const digest = (data: string | Buffer, secret = SECRET) =>
  createHmac("sha256", secret).update(data).digest();

describe("provider webhook signatures", () => {
  it("reads hex and base64 digests, with or without a scheme, several at once", () => {
    const d = digest(BODY);
    const hex = d.toString("hex");
    for (const header of [
      `sha256=${hex}`,
      hex,
      hex.toUpperCase(),
      d.toString("base64"),
      `sha256=${d.toString("base64url")}`,
      `v1=${hex}`,
      `t=1700000000,v1=${hex}`,
      `sha256=${"ab".repeat(32)}, sha256=${hex}`,
    ]) {
      expect(signatureMatches(parseSignatures(header), SECRET, BODY, "1700000000"), header).toBe(
        true,
      );
    }
    // Not a 32-byte digest: nothing to compare.
    expect(parseSignatures("sha256=abc,not-base64!,")).toEqual([]);
  });

  it("accepts a signature over timestamp.body, and refuses another secret or another body", () => {
    const stamped = digest(`1700000000.${BODY.toString()}`).toString("hex");
    expect(signatureMatches(parseSignatures(stamped), SECRET, BODY, "1700000000")).toBe(true);
    expect(signatureMatches(parseSignatures(stamped), SECRET, BODY, "1700000001")).toBe(false);
    const other = digest(BODY, "another-secret").toString("hex");
    expect(signatureMatches(parseSignatures(other), SECRET, BODY, "1")).toBe(false);
    const good = digest(BODY).toString("hex");
    expect(signatureMatches(parseSignatures(good), SECRET, Buffer.from("{}"), "1")).toBe(false);
    expect(signatureMatches([], SECRET, BODY, "1")).toBe(false);
  });

  it("reads seconds, milliseconds and ISO timestamps; five minutes either way is fresh", () => {
    const at = Date.UTC(2026, 10, 20, 10, 0, 0);
    expect(parseTimestamp(String(at / 1000))?.getTime()).toBe(at);
    expect(parseTimestamp(String(at))?.getTime()).toBe(at);
    expect(parseTimestamp("2026-11-20T11:00:00+01:00")?.getTime()).toBe(at);
    expect(parseTimestamp("yesterday")).toBeNull();
    expect(parseTimestamp("20261120")?.getTime()).toBe(20_261_120_000);
    // Milliseconds past the last date a Date holds (8.64e15): no date, not an invalid one.
    expect(parseTimestamp("8640000000000000")?.getTime()).toBe(8.64e15);
    expect(parseTimestamp("8640000000000001")).toBeNull();
    expect(parseTimestamp("9999999999999999")).toBeNull();
    expect(parseTimestamp("9999999999999999.5")).toBeNull();
    expect(isFresh(new Date(at - 299_000), at)).toBe(true);
    expect(isFresh(new Date(at + 299_000), at)).toBe(true);
    expect(isFresh(new Date(at - 301_000), at)).toBe(false);
    expect(isFresh(new Date(at + 301_000), at)).toBe(false);
  });

  it("names the missing or malformed header; a missing signature is 401", () => {
    const headers = (h: Record<string, string>) => new Headers(h);
    expect(readDeliveryHeaders(headers({ "x-store-id": "1" }))).toMatchObject({
      ok: false,
      status: 401,
      code: "missing_signature",
    });
    expect(readDeliveryHeaders(headers({ "x-webhook-signature": "sha256=00" }))).toMatchObject({
      ok: false,
      status: 400,
      code: "missing_headers",
      fields: [{ path: "headers.x-store-id" }, { path: "headers.x-webhook-timestamp" }],
    });
    expect(
      readDeliveryHeaders(
        headers({ "x-webhook-signature": "x", "x-store-id": "abc", "x-webhook-timestamp": "1" }),
      ),
    ).toMatchObject({
      status: 400,
      code: "invalid_headers",
      fields: [{ path: "headers.x-store-id" }],
    });
    expect(
      readDeliveryHeaders(
        headers({
          "x-webhook-signature": "x",
          "x-store-id": "1",
          "x-webhook-timestamp": "9999999999999999",
        }),
      ),
    ).toMatchObject({
      status: 400,
      code: "invalid_headers",
      fields: [{ path: "headers.x-webhook-timestamp" }],
    });
    const read = readDeliveryHeaders(
      headers({
        "X-Provider-Signature": "sha256=00",
        "Store-Id": "1001",
        "Webhook-Timestamp": "1700000000",
        "X-Provider-Webhook-Id": "evt-1",
        "X-Provider-Topic": "claim/created",
        "X-Provider-Api-Version": "v1",
      }),
    );
    expect(read).toMatchObject({
      ok: true,
      delivery: { storeId: 1001, webhookId: "evt-1", topic: "claim/created", apiVersion: "v1" },
    });
  });
});

describe("provider event topics and bodies", () => {
  it("classifies the topic spellings a provider may use", () => {
    for (const [raw, name] of <[string, string][]>[
      ["claim/created", "claim/created"],
      ["claims.updated", "claim/updated"],
      ["CLAIM_CLOSED", "claim/closed"],
      ["shipping_claim/created", "shipping_claim/created"],
      ["shipping-claim.status_changed", "shipping_claim/status_changed"],
      ["shippingClaim/updated", "shipping_claim/updated"],
      ["registration/created", "registration/created"],
      ["registrations.updated", "registration/updated"],
    ]) {
      expect(classifyTopic(raw).name, raw).toBe(name);
    }
    expect(classifyTopic("return/created")).toEqual({
      name: "return/created",
      kind: "unknown",
      action: null,
    });
    expect(classifyTopic(null).kind).toBe("unknown");
    expect(classifyTopic("claim").kind).toBe("unknown");
  });

  it("finds the resource in the body itself or in its wrappers", () => {
    const claim = { claimId: 5, status: "open" };
    expect(unwrapEvent(claim)).toEqual({ topic: null, eventId: null, resource: claim });
    expect(unwrapEvent({ id: "e1", topic: "claim/created", data: claim })).toEqual({
      topic: "claim/created",
      eventId: "e1",
      resource: claim,
    });
    expect(unwrapEvent({ event: "claim.updated", payload: claim })).toMatchObject({
      topic: "claim.updated",
      resource: claim,
    });
    expect(unwrapEvent({ event: { type: "claim/closed", id: "e9" }, payload: claim })).toEqual({
      topic: "claim/closed",
      eventId: "e9",
      resource: claim,
    });
    expect(unwrapEvent({ shippingClaim: claim }).resource).toEqual(claim);
    expect(unwrapEvent("text").resource).toBeNull();
    expect(unwrapEvent([claim]).resource).toBeNull();
  });

  it("reads a claim's fields and their variants; the topic's action stands in for a status", () => {
    expect(
      readClaim(
        {
          storeId: 1001,
          claimId: 5001,
          externalId: "CLM-1",
          status: "In Review",
          orderId: 42,
          sourceOrderId: "7001",
          orderName: "#1001",
          updatedOn: "2026-11-20T11:00:00+01:00",
        },
        "updated",
      ),
    ).toEqual({
      claimId: "5001",
      externalId: "CLM-1",
      status: "in_review",
      orderId: 42,
      sourceOrderId: "7001",
      orderName: "#1001",
      updatedOn: "2026-11-20T10:00:00.000Z",
    });
    expect(
      readClaim({ id: "SC-1", state: "open", order: { orderId: "43", name: "#1002" } }, null),
    ).toMatchObject({ claimId: "SC-1", status: "open", orderId: 43, orderName: "#1002" });
    expect(readClaim({ claimId: 1 }, "created")?.status).toBe("open");
    expect(readClaim({ claimId: 1 }, "closed")?.status).toBe("closed");
    expect(readClaim({ claimId: 1 }, "updated")?.status).toBeNull();
    expect(readClaim({ status: "open" }, "created")).toBeNull();
  });
});
