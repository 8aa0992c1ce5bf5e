import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalHash, canonicalJson, sameJson } from "../../src/sync/index.ts";

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
    // And so would another digest of it: SHA-256 in hex, as every earlier version stored it.
    expect(canonicalHash({ quantity: 2, name: "T-shirt", price: 10 })).toBe(
      "24dab8b283858d98f29af91332c80674531630b5698842e7bb1b3ea1c59563f1",
    );
  });

  it("sameJson says two values are the same exactly when their canonical JSON is", () => {
    // A small world of values, so that equal, nearly equal and reordered pairs come up often;
    // undefined stands for the properties JSON leaves out.
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.constantFrom(null, undefined, 0, 1, -0, 1.5, "", "a", "1", true, false),
        fc.array(tie("value"), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom("a", "b", "c"), tie("value"), { maxKeys: 3 }),
      ),
    }));
    fc.assert(
      fc.property(value, value, (a, b) => {
        expect(sameJson(a, b)).toBe(canonicalJson(a) === canonicalJson(b));
        expect(sameJson(a, reversed(a))).toBe(true);
        expect(sameJson(b, a)).toBe(sameJson(a, b));
      }),
      { numRuns: 2000 },
    );
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    // Found by the property above (seed -857015600): a key undefined on one side and null on
    // the other is a key only one side's JSON has.
    expect(sameJson({ a: null }, { a: undefined, b: null })).toBe(false);
    expect(sameJson({ a: undefined, b: null }, { a: null })).toBe(false);
    expect(sameJson({ a: { b: [1, { c: "x" }] } }, { a: { b: [1, { c: "y" }] } })).toBe(false);
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson(1, "1")).toBe(false);
  });
});
