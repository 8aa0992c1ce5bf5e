import { type OrderRef, parseOrderRef } from "../../src/sync/order-ref.ts";
import type { ModelOrder } from "./shopify-order-builder.ts";

/** An order's ID or name, read as every entry point reads it (`resync --order`, the API's `order`). */
export function orderRef(text: string): OrderRef {
  const parsed = parseOrderRef(text);
  if (!parsed.ok) throw new Error(`${text} ${parsed.message}`);
  return parsed.ref;
}

/** A shipped order at Shopify location 4001 (mapped to provider location 77 by the pipeline). */
export const shippedOrder = (id: number, overrides: Partial<ModelOrder> = {}): ModelOrder => ({
  id,
  number: id % 100_000,
  email: "grace@example.com",
  createdAt: "2026-11-01T10:00:00Z",
  updatedAt: "2026-11-02T10:00:00Z",
  cancelledAt: null,
  note: null,
  shippingCents: 500,
  taxBps: 800,
  lines: [
    {
      id: id + 1,
      variantId: 501,
      sku: "TS-1",
      title: "T-shirt",
      price: 1000,
      quantity: 2,
      currentQuantity: 2,
    },
  ],
  fulfillments: [
    {
      id: id + 2,
      status: "success",
      trackingNumber: "1Z1",
      shipmentStatus: "in_transit",
      lineIds: [id + 1],
      createdAt: "2026-11-02T10:00:00Z",
      updatedAt: "2026-11-02T10:00:00Z",
    },
  ],
  locationId: 4001,
  ...overrides,
});
