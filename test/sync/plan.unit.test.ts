import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type {
  FulfillmentWrite,
  OrderCreate,
  ProviderLineItemId,
} from "../../src/provider/schemas.ts";
import { type OrderLinks, type PlanInput, planSync } from "../../src/sync/index.ts";
import { applyPlan } from "./apply-plan.ts";

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
  it("cancels every live line of an open order whose lines are all gone, and adds none", () => {
    const o = order([
      ["a", 1, 10],
      ["b", 2, 5],
    ]);
    const links = applyPlan(null, planSync(input(o), null));
    const gone = { ...input({ ...o, subtotalMoney: 0, totalMoney: 0 }), linesGone: true };
    const ops = planSync(gone, links);
    expect(ops.map((op) => op.kind)).toEqual(["updateOrder", "cancelLineItem", "cancelLineItem"]);
    const after = applyPlan(links, ops);
    expect(after?.lineItems.every((l) => l.canceledAt !== null)).toBe(true);
    expect(planSync(gone, after)).toEqual([]);
  });

  it("creates a new order whose lines are all gone with them, then cancels them", () => {
    const gone = { ...input(order([["a", 1, 10]])), linesGone: true };
    const created = applyPlan(null, planSync(gone, null));
    expect(planSync(gone, created).map((op) => op.kind)).toEqual(["cancelLineItem"]);
    expect(planSync(gone, applyPlan(created, planSync(gone, created)))).toEqual([]);
  });

  it("leaves the lines of a canceled order whose lines are all gone to its cancellation", () => {
    const o = order([["a", 1, 10]]);
    const links = applyPlan(null, planSync(input(o), null));
    const refunded = applyPlan(links, planSync({ ...input(o), linesGone: true }, links));
    const canceled = { ...input(o, [], true), linesGone: true };
    expect(planSync(canceled, refunded).map((op) => op.kind)).toEqual(["cancelOrder"]);
  });

  it("plans a single create for a new order without fulfillments", () => {
    expect(planSync(input(order([["a", 1, 10]])), null).map((o) => o.kind)).toEqual([
      "createOrder",
    ]);
  });

  it("plans nothing for an unchanged order", () => {
    const i = input(order([["a", 1, 10]]), [fulfillment("f1")]);
    expect(planSync(i, applyPlan(null, planSync(i, null)))).toEqual([]);
  });

  it("replaces a line whose quantity changed: cancel, then add, then the order update first", () => {
    const first = input(
      order([
        ["a", 1, 10],
        ["b", 1, 5],
      ]),
    );
    const links = applyPlan(null, planSync(first, null));
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
    const links = applyPlan(
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
    const links = applyPlan(null, planSync(input(o, [fulfillment("f1")]), null));
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
    const links = applyPlan(null, planSync(input(o), null));
    const ops = planSync(
      input(order([["a", 1, 10]], "late note"), [fulfillment("f1")], true),
      links,
    );
    expect(ops.map((op) => op.kind)).toEqual(["updateOrder", "upsertFulfillment", "cancelOrder"]);
    expect(planSync(input(order([["a", 5, 10]]), [], true), applyPlan(links, ops))).toEqual([]);
  });

  it("creates and then cancels an order first seen canceled, so the provider knows it existed", () => {
    expect(planSync(input(order([["a", 1, 10]]), [], true), null).map((o) => o.kind)).toEqual([
      "createOrder",
      "cancelOrder",
    ]);
  });

  it("creates, then sends each fulfillment, then cancels, in that order", () => {
    const ops = planSync(
      input(order([["a", 1, 10]]), [fulfillment("f1"), fulfillment("f2")], true),
      null,
    );
    expect(ops.map((o) => o.key)).toEqual([
      "createOrder",
      expect.stringMatching(/^upsertFulfillment:f1:[0-9a-f]{64}$/),
      expect.stringMatching(/^upsertFulfillment:f2:[0-9a-f]{64}$/),
      "cancelOrder",
    ]);
    expect(ops.at(-1)).toMatchObject({
      body: { canceledReason: "customer", sourceCanceledOn: "2026-11-02T00:00:00Z" },
    });
  });

  it("gives every intent a key that depends only on what it does", () => {
    const first = input(order([["a", 1, 10]]));
    const links = applyPlan(null, planSync(first, null));
    const changed = input(order([["a", 2, 10]], "gift"), [fulfillment("f1")]);
    const keys = () => planSync(changed, links).map((o) => o.key);
    const [line] = links?.lineItems ?? [];
    expect(keys()).toEqual(keys());
    expect(keys()).toEqual([
      expect.stringMatching(/^updateOrder:[0-9a-f]{64}$/),
      `cancelLineItem:${line?.lineItemId}`,
      expect.stringMatching(/^addLineItem:a:[0-9a-f]{64}$/),
      expect.stringMatching(/^upsertFulfillment:f1:[0-9a-f]{64}$/),
    ]);
  });

  it("updates every order-level field together, never line items, store or source id", () => {
    const links = applyPlan(null, planSync(input(order([["a", 1, 10]])), null));
    const [update] = planSync(input(order([["a", 1, 10]], "gift")), links);
    expect(update?.kind).toBe("updateOrder");
    const body = update?.body as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(
      [
        "billingAddress",
        "customer",
        "notes",
        "shippingAddress",
        "shippingMoney",
        "subtotalMoney",
        "taxMoney",
        "totalMoney",
      ].sort(),
    );
  });

  it("plans nothing when only Shopify's update time changed", () => {
    const o = order([["a", 1, 10]]);
    const links = applyPlan(
      null,
      planSync(input({ ...o, sourceUpdatedOn: "2026-11-01T00:00:00Z" }), null),
    );
    expect(planSync(input({ ...o, sourceUpdatedOn: "2026-11-05T00:00:00Z" }), links)).toEqual([]);
  });

  it("stamps a line cancel with the order's cancellation time, else its Shopify update time", () => {
    const links = applyPlan(
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
    const edited = { ...order([["a", 1, 10]]), sourceUpdatedOn: "2026-11-04T00:00:00Z" };
    expect(planSync(input(edited), links).find((o) => o.kind === "cancelLineItem")?.body).toEqual({
      sourceCanceledOn: "2026-11-04T00:00:00Z",
    });
    expect(
      planSync(input(edited, [], true), links).find((o) => o.kind === "cancelLineItem")?.body,
    ).toEqual({ sourceCanceledOn: "2026-11-02T00:00:00Z" });
  });

  it("plans nothing more for an order canceled at the provider, whatever changed", () => {
    const links = applyPlan(null, planSync(input(order([["a", 1, 10]]), [], true), null));
    expect(links?.canceledAt).not.toBeNull();
    expect(planSync(input(order([["b", 4, 1]], "late"), [fulfillment("f1")], true), links)).toEqual(
      [],
    );
    expect(planSync(input(order([["b", 4, 1]])), links)).toEqual([]);
  });

  it("keeps one live provider line per Shopify line and cancels a duplicate", () => {
    const o = order([["a", 1, 10]]);
    const links = applyPlan(null, planSync(input(o), null)) as OrderLinks;
    const [line] = links.lineItems;
    if (!line) throw new Error("no line");
    links.lineItems.push({ ...line, lineItemId: 99 as ProviderLineItemId });
    expect(planSync(input(o), links)).toMatchObject([{ kind: "cancelLineItem", lineItemId: 99 }]);
  });

  it("sends a cancelled fulfillment the provider already has, to replace its status", () => {
    const o = order([["a", 1, 10]]);
    const links = applyPlan(null, planSync(input(o, [fulfillment("f1")]), null));
    expect(planSync(input(o, [fulfillment("f1", "cancelled")]), links)).toMatchObject([
      {
        kind: "upsertFulfillment",
        sourceFulfillmentId: "f1",
        body: { shipmentStatus: "cancelled" },
      },
    ]);
  });

  it("plans nothing for a fulfillment the provider has that Shopify no longer lists", () => {
    const o = order([["a", 1, 10]]);
    const links = applyPlan(null, planSync(input(o, [fulfillment("f1")]), null));
    expect(planSync(input(o), links)).toEqual([]);
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
        const before = applyPlan(
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
        const after = applyPlan(before, planSync(target, before));
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
