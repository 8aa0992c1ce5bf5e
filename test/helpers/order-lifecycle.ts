import fc from "fast-check";
import { fulfillmentPayload, type ModelOrder, orderPayload } from "./shopify-order-builder.ts";

/** One thing a merchant does to an order in Shopify's admin. */
export type Action =
  | { kind: "note"; text: string }
  | { kind: "addLine"; price: number; quantity: number }
  | { kind: "removeLine"; pick: number }
  | { kind: "changeQuantity"; pick: number; quantity: number }
  | { kind: "fulfill"; tracking: string }
  | { kind: "tracking"; pick: number; status: "in_transit" | "out_for_delivery" | "delivered" }
  | { kind: "cancel" };

export const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant("note" as const), text: fc.string({ maxLength: 12 }) }),
  fc.record({
    kind: fc.constant("addLine" as const),
    price: fc.integer({ min: 0, max: 50_000 }),
    quantity: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ kind: fc.constant("removeLine" as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant("changeQuantity" as const),
    pick: fc.nat(),
    quantity: fc.integer({ min: 1, max: 5 }),
  }),
  fc.record({
    kind: fc.constant("fulfill" as const),
    tracking: fc.stringMatching(/^1Z[0-9A-F]{6}$/),
  }),
  fc.record({
    kind: fc.constant("tracking" as const),
    pick: fc.nat(),
    status: fc.constantFrom(
      "in_transit" as const,
      "out_for_delivery" as const,
      "delivered" as const,
    ),
  }),
  fc.constant({ kind: "cancel" as const }),
);

/** A webhook Shopify would send: its topic, body and delivery id. */
export interface Delivery {
  topic: string;
  body: unknown;
  webhookId: string;
}

/** An order as the lifecycle tests start it: one line, a customer, shipping and tax. */
export function newModelOrder(seq: number, firstLineId: number): ModelOrder {
  return {
    id: 9_000_000_000 + seq,
    number: 2000 + seq,
    email: `buyer${seq}@example.com`,
    createdAt: "2026-11-01T15:00:00Z",
    updatedAt: "2026-11-01T15:00:00Z",
    cancelledAt: null,
    note: null,
    shippingCents: 700,
    taxBps: 725,
    lines: [
      {
        id: firstLineId,
        variantId: 501,
        sku: "BASE",
        title: "Base item",
        price: 2599,
        quantity: 1,
        currentQuantity: 1,
      },
    ],
    fulfillments: [],
    locationId: 4001,
  };
}

/** Applies one merchant action to the model and returns the webhooks Shopify would send. */
export function applyAction(
  model: ModelOrder,
  a: Action,
  step: number,
  nextId: () => number,
): Delivery[] {
  if (model.cancelledAt) return [];
  const at = new Date(Date.parse("2026-11-01T15:00:00Z") + step * 60_000).toISOString();
  model.updatedAt = at;
  const live = model.lines.filter((l) => l.currentQuantity > 0);
  const out: Delivery[] = [];
  switch (a.kind) {
    case "note":
      model.note = a.text || null;
      break;
    case "addLine": {
      const id = nextId();
      model.lines.push({
        id,
        variantId: 600 + id,
        sku: `SKU-${id}`,
        title: `Item ${id}`,
        price: a.price,
        quantity: a.quantity,
        currentQuantity: a.quantity,
      });
      break;
    }
    case "removeLine":
      // An order keeps at least one line: Shopify's editor refuses to remove the last one.
      if (live.length > 1)
        (live[a.pick % live.length] as { currentQuantity: number }).currentQuantity = 0;
      break;
    case "changeQuantity": {
      const line = live[a.pick % live.length];
      if (line) {
        line.currentQuantity = a.quantity;
        line.quantity = Math.max(line.quantity, a.quantity);
      }
      break;
    }
    case "fulfill": {
      const f = {
        id: nextId(),
        status: "success" as const,
        trackingNumber: a.tracking,
        shipmentStatus: "in_transit",
        lineIds: live.map((l) => l.id),
        createdAt: at,
        updatedAt: at,
      };
      model.fulfillments.push(f);
      out.push({
        topic: "fulfillments/create",
        body: fulfillmentPayload(model, f),
        webhookId: `f-${f.id}-${step}`,
      });
      break;
    }
    case "tracking": {
      const f = model.fulfillments[a.pick % Math.max(1, model.fulfillments.length)];
      if (f) {
        f.shipmentStatus = a.status;
        f.updatedAt = at;
        out.push({
          topic: "fulfillments/update",
          body: fulfillmentPayload(model, f),
          webhookId: `fu-${f.id}-${step}`,
        });
      }
      break;
    }
    case "cancel":
      model.cancelledAt = at;
      out.push({ topic: "orders/cancelled", body: orderPayload(model), webhookId: `c-${step}` });
      return out;
  }
  out.push({ topic: "orders/updated", body: orderPayload(model), webhookId: `u-${step}` });
  return out;
}

/** An order's whole history: its create webhook, then the webhooks of each action, in order. */
export function orderHistory(
  seq: number,
  actions: Action[],
): { model: ModelOrder; deliveries: Delivery[] } {
  let ids = seq * 1000;
  const model = newModelOrder(seq, ++ids);
  const deliveries: Delivery[] = [
    { topic: "orders/create", body: orderPayload(model), webhookId: `create-${seq}` },
  ];
  actions.forEach((a, step) => {
    deliveries.push(...applyAction(model, a, step + 1, () => ++ids));
  });
  return { model, deliveries };
}
