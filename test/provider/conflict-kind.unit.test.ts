import { describe, expect, it } from "vitest";
import { errorFromResponse, ProviderConflictError } from "../../src/provider/errors.ts";

const answer = (status: number, body: unknown) =>
  errorFromResponse({ status, headers: new Headers() }, body, {
    method: "DELETE",
    path: "/orders/7",
  });

describe("what a provider conflict means, decided where its answer is read", () => {
  it("reads the documented codes, the other spellings and a bare 409 that says so", () => {
    const kinds = [
      answer(409, { error: { code: "order_canceled", message: "immutable" } }),
      answer(409, { error: { code: "order_cancelled" } }),
      answer(409, { error: { message: "The order is already canceled." } }),
      answer(422, { error: { code: "invalid", message: "order already cancelled" } }),
      answer(409, { error: { code: "duplicate_order", existingOrderId: 3 } }),
      answer(409, { error: { code: "duplicate_line_item" } }),
      answer(409, { error: { code: "version_conflict", message: "try again" } }),
    ].map((e) => (e instanceof ProviderConflictError ? e.kind : e.name));
    expect(kinds).toEqual([
      "order_canceled",
      "order_canceled",
      "order_canceled",
      "order_canceled",
      "duplicate_order",
      "duplicate_line_item",
      "other",
    ]);
  });
});
