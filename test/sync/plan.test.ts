import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type {
  FulfillmentWrite,
  OrderCreate,
  ProviderFulfillmentId,
  ProviderLineItemId,
  ProviderOrderId,
  ProviderStoreId,
} from "../../src/provider/schemas.ts";
import { type OrderLinks, type PlanInput, planSync, type SyncOp } from "../../src/sync/index.ts";

const address = {
  line1: "1 Main St",
  city: "Springfield",
  stateOrProvinceCode: "IL",
  postalCode: "62701",
  countryCode: "US",
};
function order(lines: [string, number, number][], note = ""): OrderCreate {
  const subtotal = lines.reduce((s, [, q, p]) => s + q * p, 0);
  return {
    storeId: 1001,
    sourceOrderId: "5001",
    customer: { sourceCustomerId: "c", firstName: "A", lastName: "B", email: "a@example.com" },
    lineItems: lines.map(([id, quantity, price]) => ({
      sourceLineItemId: id,
      name: id,
      quantity,
      sku: id,
      tax: 0,
      price,
    })),
    shippingMoney: 0,
    subtotalMoney: subtotal,
    taxMoney: 0,
    totalMoney: subtotal,
    billingAddress: address,
    shippingAddress: address,
    notes: note,
  };
}
const fulfillment = (id: string, status = "in_transit"): FulfillmentWrite => ({
  sourceFulfillmentId: id,
  fulfillmentLocationId: 7,
  shipmentStatus: status,
});

/** What the links look like after every op of a plan succeeded (the executor's job). */
function apply(links: OrderLinks | null, ops: SyncOp[], ids = { next: 1 }): OrderLinks | null {
  let out = links ? structuredClone(links) : null;
  for (const op of ops) {
    if (op.kind === "createOrder") {
      out = {
        storeId: 1001 as ProviderStoreId,
        sourceOrderId: op.body.sourceOrderId,
        orderId: 1 as ProviderOrderId,
        orderHash: op.orderHash,
        syncedVersion: null,
        canceledAt: null,
        lineItems: op.body.lineItems.map((l) => ({
          sourceLineItemId: l.sourceLineItemId,
          lineItemId: ids.next++ as ProviderLineItemId,
          hash: op.lineItemHashes[l.sourceLineItemId] ?? "",
          canceledAt: null,
        })),
        fulfillments: [],
      };
    } else if (!out) throw new Error(`${op.kind} before create`);
    else if (op.kind === "updateOrder") out.orderHash = op.orderHash;
    else if (op.kind === "cancelLineItem") {
      const line = out.lineItems.find((l) => l.lineItemId === op.lineItemId);
      if (line) line.canceledAt = "2026-11-01T00:00:00Z";
    } else if (op.kind === "addLineItem")
      out.lineItems.push({
        sourceLineItemId: op.sourceLineItemId,
        lineItemId: ids.next++ as ProviderLineItemId,
        hash: op.hash,
        canceledAt: null,
      });
    else if (op.kind === "upsertFulfillment") {
      out.fulfillments = out.fulfillments.filter(
        (f) => f.sourceFulfillmentId !== op.sourceFulfillmentId,
      );
      out.fulfillments.push({
        sourceFulfillmentId: op.sourceFulfillmentId,
        fulfillmentId: 9 as ProviderFulfillmentId,
        hash: op.hash,
      });
    } else if (op.kind === "cancelOrder") out.canceledAt = "2026-11-01T00:00:00Z";
  }
  return out;
}

const input = (
  o: OrderCreate,
  fulfillments: FulfillmentWrite[] = [],
  canceled = false,
): PlanInput => ({
  order: o,
  fulfillments,
  canceled: canceled ? { reason: "customer", at: "2026-11-02T00:00:00Z" } : null,
});

describe("planSync", () => {
  it("plans a single create for a new order without fulfillments", () => {
    expect(planSync(input(order([["a", 1, 10]])), null).map((o) => o.kind)).toEqual([
      "createOrder",
    ]);
  });

  it("plans nothing for an unchanged order", () => {
    const i = input(order([["a", 1, 10]]), [fulfillment("f1")]);
    expect(planSync(i, apply(null, planSync(i, null)))).toEqual([]);
  });

  it("replaces a line whose quantity changed: cancel, then add, then the order update first", () => {
    const first = input(
      order([
        ["a", 1, 10],
        ["b", 1, 5],
      ]),
    );
    const links = apply(null, planSync(first, null));
    const ops = planSync(
      input(
        order([
          ["a", 3, 10],
          ["b", 1, 5],
        ]),
      ),
      links,
    );
    expect(ops.map((o) => o.kind)).toEqual(["updateOrder", "cancelLineItem", "addLineItem"]);
    expect(ops[2]?.kind === "addLineItem" && ops[2].body.quantity).toBe(3);
  });

  it("cancels a removed line and adds a new one", () => {
    const links = apply(
      null,
      planSync(
        input(
          order([
            ["a", 1, 10],
            ["b", 1, 5],
          ]),
        ),
        null,
      ),
    );
    const ops = planSync(
      input(
        order([
          ["a", 1, 10],
          ["c", 2, 1],
        ]),
      ),
      links,
    );
    expect(
      ops.map((o) =>
        o.kind === "cancelLineItem" || o.kind === "addLineItem"
          ? `${o.kind}:${o.sourceLineItemId}`
          : o.kind,
      ),
    ).toEqual(["updateOrder", "cancelLineItem:b", "addLineItem:c"]);
  });

  it("sends a fulfillment again only when its tracking or status changed", () => {
    const o = order([["a", 1, 10]]);
    const links = apply(null, planSync(input(o, [fulfillment("f1")]), null));
    expect(planSync(input(o, [fulfillment("f1")]), links)).toEqual([]);
    expect(
      planSync(input(o, [fulfillment("f1", "delivered")]), links).map((op) => op.kind),
    ).toEqual(["upsertFulfillment"]);
  });

  it("does not create a fulfillment that was cancelled before it was ever sent", () => {
    expect(
      planSync(input(order([["a", 1, 10]]), [fulfillment("f1", "cancelled")]), null).map(
        (o) => o.kind,
      ),
    ).toEqual(["createOrder"]);
  });

  it("cancels the order last, and plans nothing once it is canceled", () => {
    const o = order([["a", 1, 10]]);
    const links = apply(null, planSync(input(o), null));
    const ops = planSync(
      input(order([["a", 1, 10]], "late note"), [fulfillment("f1")], true),
      links,
    );
    expect(ops.map((op) => op.kind)).toEqual(["updateOrder", "upsertFulfillment", "cancelOrder"]);
    expect(planSync(input(order([["a", 5, 10]]), [], true), apply(links, ops))).toEqual([]);
  });

  it("creates and then cancels an order first seen canceled, so the provider knows it existed", () => {
    expect(planSync(input(order([["a", 1, 10]]), [], true), null).map((o) => o.kind)).toEqual([
      "createOrder",
      "cancelOrder",
    ]);
  });

  it("converges from any earlier state in one plan (property)", () => {
    const lines = fc.uniqueArray(
      fc.tuple(
        fc.constantFrom("a", "b", "c", "d"),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 20 }),
      ),
      {
        minLength: 1,
        maxLength: 4,
        selector: ([id]) => id,
      },
    );
    const ful = fc.uniqueArray(
      fc.tuple(
        fc.constantFrom("f1", "f2"),
        fc.constantFrom("in_transit", "delivered", "cancelled"),
      ),
      { maxLength: 2, selector: ([id]) => id },
    );
    fc.assert(
      fc.property(lines, ful, lines, ful, fc.boolean(), (l1, f1, l2, f2, cancel) => {
        const before = apply(
          null,
          planSync(
            input(
              order(l1),
              f1.map(([id, s]) => fulfillment(id, s)),
            ),
            null,
          ),
        );
        const target = input(
          order(l2, "x"),
          f2.map(([id, s]) => fulfillment(id, s)),
          cancel,
        );
        const after = apply(before, planSync(target, before));
        expect(planSync(target, after)).toEqual([]);
        const live = after?.lineItems
          .filter((l) => l.canceledAt === null)
          .map((l) => l.sourceLineItemId)
          .sort();
        expect(live).toEqual(l2.map(([id]) => id).sort());
        expect(after?.canceledAt !== null).toBe(cancel);
      }),
    );
  });
});
