import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseShopifyJson, toCents } from "../../src/shopify/index.ts";

describe("toCents", () => {
  it("converts decimal strings exactly", () => {
    expect(toCents("19.99")).toBe(1999);
    expect(toCents("0.1")).toBe(10);
    expect(toCents("1000")).toBe(100_000);
    expect(toCents("-2.50")).toBe(-250);
    expect(toCents("1.235")).toBe(124);
    expect(toCents("1.234")).toBe(123);
    expect(toCents(12.5)).toBe(1250);
    expect(toCents("abc")).toBeNull();
    expect(toCents("")).toBeNull();
    expect(toCents(null)).toBeNull();
  });

  it("is exact for every two-decimal amount up to 99,999,999.99", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9_999_999_999 }), (cents) => {
        const text = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
        expect(toCents(text)).toBe(cents);
      }),
    );
  });
});

describe("parseShopifyJson", () => {
  it("keeps 64-bit IDs beyond 2^53 exact", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 63n - 1n }), (id) => {
        const parsed = parseShopifyJson(`{"id": ${id}, "price": 10.5, "ids": [${id}, 7]}`) as {
          id: unknown;
          price: unknown;
          ids: unknown[];
        };
        expect(parsed.id).toBe(id.toString());
        expect(parsed.ids).toEqual([id.toString(), 7]);
        expect(parsed.price).toBe(10.5);
      }),
    );
  });

  it("parses ordinary payloads with plain numbers", () => {
    expect(parseShopifyJson('{"id": 5001, "total": 1.5}')).toEqual({ id: 5001, total: 1.5 });
  });
});
