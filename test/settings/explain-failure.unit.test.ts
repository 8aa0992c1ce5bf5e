import { describe, expect, it } from "vitest";
import { explainFailure } from "../../src/settings/sync-status.ts";

// What the settings page tells a merchant about a failed order: decided by the failure's
// category and the fields it names, never by words in its message.
describe("explainFailure", () => {
  it("names an unmapped Shopify location by its name", () => {
    const failure = {
      message: "the order cannot be sent as it is",
      category: "config" as const,
      fields: [{ path: "fulfillments.0.fulfillmentLocationId", ref: "655441491" }],
    };
    expect(explainFailure(failure, new Map([["655441491", "Warehouse East"]]))).toBe(
      "The Shopify location “Warehouse East” has no provider fulfillment location: map it under “Locations” below, then resync the order.",
    );
  });

  it("sends a currency mismatch to the store choice", () => {
    const failure = { message: "x", category: "config" as const, fields: [{ path: "currency" }] };
    expect(explainFailure(failure)).toMatch(/^The order's currency differs/);
  });

  it("does not read a provider's wording as a settings problem", () => {
    // A provider refusal that happens to mention a currency and a location in its message.
    const failure = {
      message: "the provider refused the request: customerCurrencyCode unknown at location 5",
      category: "provider-validation" as const,
      fields: [{ path: "customerCurrencyCode" }],
    };
    expect(explainFailure(failure)).toBe(failure.message);
  });

  it("tells the merchant to correct the customer when only customer fields were refused", () => {
    const failure = {
      message: "the provider refused the request: customer.email: invalid",
      category: "provider-validation" as const,
      fields: [{ path: "customer.email" }, { path: "shippingAddress.postalCode" }],
    };
    expect(explainFailure(failure)).toMatch(/refused the customer's details/);
  });

  it("points refused credentials and a paused shop at the provider connection", () => {
    const failure = {
      message: "the provider refused our credentials (invalid_client): 401",
      category: "config" as const,
      fields: [],
    };
    expect(explainFailure(failure)).toMatch(/^The provider settings are incomplete/);
  });

  it("shows a failure recorded before categories were kept as it was worded", () => {
    expect(explainFailure("fulfillmentLocationId: unknown mapping")).toBe(
      "fulfillmentLocationId: unknown mapping",
    );
  });
});
