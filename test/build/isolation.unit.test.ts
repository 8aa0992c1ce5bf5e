import { describe, expect, it } from "vitest";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * Both tiers share each worker's modules among the files it runs (vitest.config.ts): a file that
 * edits an object a helper hands out would change what the next file sees, and only when the two
 * happen to share a worker. (A file that replaces a module: test/build/unit-tier.test.ts.)
 */
describe("files that share a worker's modules", () => {
  it("get payloads whose parts are their own: editing one leaves the next untouched", () => {
    const model = newModelOrder(1, 1000);
    const hostile = orderPayload(model);
    hostile.shipping_address.zip = {} as unknown as string;
    hostile.billing_address.address1 = "edited";
    const next = orderPayload(model);
    expect(next.shipping_address.zip).toBe("22201");
    expect(next.billing_address.address1).toBe("10 Navy Way");
  });
});
