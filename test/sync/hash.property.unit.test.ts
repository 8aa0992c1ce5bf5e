import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalHash, canonicalJson } from "../../src/sync/index.ts";

/** Reverses the key order of every object, at every level. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .reverse()
        .map(([k, v]) => [k, reversed(v)]),
    );
  }
  return value;
}

describe("canonicalJson (the hashes stored in the links)", () => {
  it("is valid JSON of the same value, whatever the key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value) ?? "null"));
        expect(canonicalJson(reversed(value))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it("sorts keys at every level and leaves out undefined properties", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: null, e: "x" }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"e":"x","f":null}]},"b":1}',
    );
  });

  it("keeps the hash of a stored link stable", () => {
    // A changed serialization would make every stored hash differ: each order would be sent again.
    expect(canonicalHash({ quantity: 2, name: "T-shirt", price: 10 })).toBe(
      canonicalHash({ price: 10, quantity: 2, name: "T-shirt" }),
    );
    expect(canonicalJson({ quantity: 2, name: "T-shirt", price: 10 })).toBe(
      '{"name":"T-shirt","price":10,"quantity":2}',
    );
  });
});
