import { describe, expect, it } from "vitest";
import { ORDER_REF_FORMS, parseOrderRef } from "../../src/sync/order-ref.ts";

describe("an order's ID or name as given", () => {
  it("reads digits as an ID and a name, a gid as an ID, any other text as a name", () => {
    expect(parseOrderRef(" 1001 ")).toEqual({
      ok: true,
      ref: { text: "1001", id: "1001", name: "#1001" },
    });
    expect(parseOrderRef("gid://shopify/Order/820982911946154508")).toEqual({
      ok: true,
      ref: { text: "gid://shopify/Order/820982911946154508", id: "820982911946154508", name: null },
    });
    for (const [text, name] of [
      ["#1001", "#1001"],
      ["EU-1001", "#EU-1001"],
      ["#-5", "#-5"],
      ["1e3", "#1e3"],
    ] as const) {
      expect(parseOrderRef(text), text).toEqual({ ok: true, ref: { text, id: null, name } });
    }
  });

  it("refuses what can be no order's ID nor name, saying why", () => {
    const notAnId = `is not an order's ID (a whole number from 1 to 18446744073709551615): give ${ORDER_REF_FORMS}`;
    for (const text of ["-5", "0", "007", "+5", "1.5", "18446744073709551616"]) {
      expect(parseOrderRef(text), text).toEqual({ ok: false, message: notAnId });
    }
    for (const text of [
      "gid://shopify/Order/abc",
      "gid://shopify/Order/0",
      "gid://shopify/Order/",
    ]) {
      expect(parseOrderRef(text), text).toEqual({
        ok: false,
        message: `is not an order's ID (gid://shopify/Order/ and its digits): give ${ORDER_REF_FORMS}`,
      });
    }
    expect(parseOrderRef("gid://shopify/Product/5")).toEqual({
      ok: false,
      message: `is the ID of a Product, not an order: give ${ORDER_REF_FORMS}`,
    });
    expect(parseOrderRef("  ")).toEqual({ ok: false, message: `must be ${ORDER_REF_FORMS}` });
  });
});
