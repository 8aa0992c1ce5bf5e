import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LinkRepository } from "../../src/store/index.ts";
import { startPipeline } from "../helpers/pipeline.ts";
import {
  fulfillmentPayload,
  lineTaxCents,
  type ModelOrder,
  orderPayload,
  orderTotals,
} from "../helpers/shopify-order-builder.ts";

type Action =
  | { kind: "note"; text: string }
  | { kind: "addLine"; price: number; quantity: number }
  | { kind: "removeLine"; pick: number }
  | { kind: "changeQuantity"; pick: number; quantity: number }
  | { kind: "fulfill"; tracking: string }
  | { kind: "tracking"; pick: number; status: "in_transit" | "out_for_delivery" | "delivered" }
  | { kind: "cancel" };

const action: fc.Arbitrary<Action> = fc.oneof(
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

interface Delivery {
  topic: string;
  body: unknown;
  webhookId: string;
}

/** Applies one merchant action to the model and returns the webhooks Shopify would send. */
function apply(model: ModelOrder, a: Action, step: number, nextId: () => number): Delivery[] {
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

/** A link repository whose record writes fail once per key: the crash between call and link. */
function crashingLinks(
  links: LinkRepository,
  shouldCrash: () => boolean,
  onCrash: () => void,
): LinkRepository {
  const crashed = new Set<string>();
  return new Proxy(links, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (typeof property === "string" && property.startsWith("record")) {
        return (input: { key: string; sourceOrderId: string }) => {
          const id = `${input.sourceOrderId}:${input.key}`;
          if (!crashed.has(id) && shouldCrash()) {
            crashed.add(id);
            onCrash();
            throw new Error("simulated crash after the provider call, before the link write");
          }
          return value.call(target, input);
        };
      }
      return value.bind(target);
    },
  });
}

describe("order lifecycles, property-based, against the sandbox over HTTP", () => {
  it("leaves the provider holding exactly each order's latest state: no duplicate, no lost change", async () => {
    let crashDice = 0;
    let crashes = 0;
    const pipeline = await startPipeline({
      workers: 2,
      sandbox: { faults: { dropAfterCommitRate: 0.1, seed: 7 } },
      env: { SYNC_ATTEMPTS: "30" },
      wrapLinks: (links) =>
        crashingLinks(
          links,
          () => {
            crashDice = (crashDice * 1103515245 + 12345) % 2 ** 31;
            return crashDice % 10 === 0;
          },
          () => crashes++,
        ),
    });
    let orderSeq = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(action, { minLength: 1, maxLength: 8 }),
          fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 20, maxLength: 20 }),
          fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
          async (actions, copies, order) => {
            orderSeq++;
            let ids = orderSeq * 1000;
            const model: ModelOrder = {
              id: 9_000_000_000 + orderSeq,
              number: 2000 + orderSeq,
              email: `buyer${orderSeq}@example.com`,
              createdAt: "2026-11-01T15:00:00Z",
              updatedAt: "2026-11-01T15:00:00Z",
              cancelledAt: null,
              note: null,
              shippingCents: 700,
              taxBps: 725,
              lines: [
                {
                  id: ++ids,
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
            const deliveries: Delivery[] = [
              {
                topic: "orders/create",
                body: orderPayload(model),
                webhookId: `create-${orderSeq}`,
              },
            ];
            actions.forEach((a, step) => {
              deliveries.push(...apply(model, a, step + 1, () => ++ids));
            });

            // Each webhook delivered one to three times, all in random order.
            const all = deliveries.flatMap((d, i) =>
              Array.from({ length: copies[i % copies.length] ?? 1 }, () => d),
            );
            const shuffled = all
              .map((d) => ({ d, k: order.next().value }))
              .sort((a, b) => a.k - b.k)
              .map((x) => x.d);
            for (const d of shuffled) {
              const id = `${orderSeq}-${d.webhookId}`;
              const response = await pipeline.send(d.topic, d.body, { webhookId: id, eventId: id });
              expect(response.status).toBe(200);
            }
            await pipeline.drain(60_000);

            const matches = pipeline.sandbox.state.orders.all.filter(
              (o) => o.sourceOrderId === String(model.id),
            );
            expect(matches).toHaveLength(1);
            const provider = matches[0];
            if (!provider) return;
            const totals = orderTotals(model);
            expect(provider.totalMoney).toBe(totals.total / 100);
            expect(provider.canceled).toBe(model.cancelledAt !== null);
            expect(provider.notes || null).toBe(model.note?.trim() || null);
            const liveProvider = provider.lineItems
              .filter((l) => !l.sourceCanceledOn)
              .map((l) => [l.sourceLineItemId, l.quantity, l.price, l.tax])
              .sort();
            const liveModel = model.lines
              .filter((l) => l.currentQuantity > 0)
              .map((l) => [
                String(l.id),
                l.currentQuantity,
                l.price / 100,
                Math.round(
                  (lineTaxCents(l, model.taxBps, l.quantity) * l.currentQuantity) / l.quantity,
                ) / 100,
              ])
              .sort();
            expect(liveProvider).toEqual(liveModel);
            const providerFulfillments = provider.fulfillments
              .map((f) => [f.sourceFulfillmentId, f.trackingInfoNumber, f.shipmentStatus])
              .sort();
            const modelFulfillments = model.fulfillments
              .map((f) => [String(f.id), f.trackingNumber, f.shipmentStatus])
              .sort();
            expect(providerFulfillments).toEqual(modelFulfillments);
            const dead = await pipeline.ctx.queues.deadLetter.count();
            expect(dead).toBe(0);
          },
        ),
        { numRuns: 25, seed: 20261122 },
      );
      // The run must really have gone through both kinds of failure it claims to survive.
      expect(crashes).toBeGreaterThan(0);
      expect(pipeline.sandbox.state.counters.faults).toBeGreaterThan(0);
    } finally {
      await pipeline.close();
    }
  }, 240_000);
});
