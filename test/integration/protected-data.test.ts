import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { explainFailure, readSyncStatus } from "../../src/settings/sync-status.ts";
import { PROTECTED_DATA_REASON } from "../../src/sync/index.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * An app not approved for protected customer data receives orders with the customer's name,
 * email, phone and address set to null. The provider needs an email or a phone: nothing can be
 * sent, and the merchant is told why, once.
 */
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline();
});
afterAll(() => p.close());

/** The order as Shopify sends it to an app without protected-data approval. */
function redacted(seq: number) {
  const body = orderPayload(newModelOrder(seq, seq * 1000)) as Record<string, unknown>;
  const blank = (a: unknown) => ({
    ...(a as Record<string, unknown>),
    first_name: null,
    last_name: null,
    name: null,
    address1: null,
    address2: null,
    phone: null,
  });
  return {
    ...body,
    email: null,
    contact_email: null,
    phone: null,
    customer: { id: 900_000 + seq, email: null, first_name: null, last_name: null, phone: null },
    billing_address: blank(body.billing_address),
    shipping_address: blank(body.shipping_address),
  };
}

describe("protected customer data withheld", () => {
  it("dead-letters with the reason, and the settings page says it once for the shop", async () => {
    await p.send("orders/create", redacted(61));
    await p.send("orders/create", redacted(62));
    await p.drain();
    const dead = await p.ctx.queues.deadLetter.getJobs();
    expect(dead).toHaveLength(2);
    for (const d of dead) {
      expect(d.data).toMatchObject({ category: "protected-data", reason: PROTECTED_DATA_REASON });
    }
    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    if (!shop) throw new Error("no shop");
    const status = await readSyncStatus(p.ctx, shop);
    expect(status.protectedDataWithheld).toBe(2);
    expect(explainFailure(status.failures[0]?.failure ?? "")).toBe(
      "Shopify withheld this order's customer (see the notice at the top of the page).",
    );
  });

  it("does not take an order that still has a phone for a withheld one", async () => {
    const body = { ...redacted(63), phone: "+17035550100" };
    await p.send("orders/create", body);
    await p.drain();
    const entries = await p.ctx.queues.deadLetter.getJobs();
    const mine = entries.find(
      (d) =>
        d.data.orderId === String(900_000 + 63 - 900_000 + 0) ||
        d.data.orderId === String((body as { id?: number }).id),
    );
    expect(mine?.data.category).not.toBe("protected-data");
  });
});
