import * as crypto from "node:crypto";
import { createHmac } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { tokenMatches } from "../../src/server/admin/index.ts";
import { verifyShopifyWebhook } from "../../src/shopify/index.ts";

/**
 * Signatures and the admin token are compared with `crypto.timingSafeEqual`, whose time does not
 * depend on where two buffers differ. Timing is not measured (the differences are nanoseconds,
 * lost in the HMAC's own noise): the comparator is observed directly. `timingSafeEqual` keeps its
 * real behaviour; the spy only records that the comparison went through it.
 */
vi.mock("node:crypto", async (original) => {
  const real = await original<typeof import("node:crypto")>();
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) };
});
const spy = vi.mocked(crypto.timingSafeEqual);
afterEach(() => spy.mockClear());

const SECRET = "compare-secret";
const body = new TextEncoder().encode('{"id":1}');
const digest = createHmac("sha256", SECRET).update(body).digest();
const headers = (hmac: string) =>
  new Headers({
    "x-shopify-hmac-sha256": hmac,
    "x-shopify-topic": "orders/create",
    "x-shopify-shop-domain": "a.myshopify.com",
    "x-shopify-api-version": "2026-10",
    "x-shopify-webhook-id": "w1",
  });

describe("constant-time comparisons", () => {
  it("compares a webhook HMAC that differs only in its last byte through timingSafeEqual", () => {
    const forged = Buffer.from(digest);
    forged[31] = (forged[31] as number) ^ 1;
    const check = verifyShopifyWebhook(headers(forged.toString("base64")), body, SECRET);
    expect(check.valid).toBe(false);
    expect(spy).toHaveBeenCalledTimes(1);
    const [given, expected] = spy.mock.calls[0] as [Buffer, Buffer];
    expect(Buffer.compare(given, forged)).toBe(0);
    expect(Buffer.compare(expected, digest)).toBe(0);
    expect(spy.mock.results[0]?.value).toBe(false);
  });

  it("compares a valid webhook HMAC through timingSafeEqual too (no fast path for a match)", () => {
    expect(verifyShopifyWebhook(headers(digest.toString("base64")), body, SECRET).valid).toBe(true);
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it("rejects an HMAC of another length without comparing: a digest's length is public", () => {
    const check = verifyShopifyWebhook(
      headers(digest.subarray(0, 16).toString("base64")),
      body,
      SECRET,
    );
    expect(check.valid).toBe(false);
    expect(spy).not.toHaveBeenCalled();
  });

  it("compares admin tokens as equal-length hashes, so neither content nor length leaks", () => {
    expect(tokenMatches("a-much-longer-guess-of-the-token", "the-real-admin-token")).toBe(false);
    expect(tokenMatches("the-real-admin-token", "the-real-admin-token")).toBe(true);
    expect(spy).toHaveBeenCalledTimes(2);
    for (const [a, b] of spy.mock.calls as [Buffer, Buffer][]) {
      expect(a.byteLength).toBe(32);
      expect(b.byteLength).toBe(32);
    }
  });
});
