import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { actionArbitrary, orderHistory } from "../helpers/order-lifecycle.ts";
import { compareProjections } from "../helpers/order-projection.ts";
import { startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { propertySeeds } from "../helpers/property-seeds.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";
import { AMPLE_BUDGET } from "../helpers/standin-orders.ts";

/**
 * Links under a provider that forgets orders, loses everything and hands its IDs out again (a
 * restart without its state), and a shop that switches store back and forth: whatever the
 * history, no provider order ever holds another Shopify order's data, no store holds an order
 * twice, and once every order changes again the current store holds each one exactly as it is.
 */
type Event =
  | { kind: "step"; order: number }
  | { kind: "forget"; order: number }
  | { kind: "lose" }
  | { kind: "switch"; bulk: boolean };

const ORDERS = 3;
const eventArbitrary: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant("step" as const), order: fc.nat(ORDERS - 1) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("forget" as const), order: fc.nat(ORDERS - 1) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "lose" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("switch" as const), bulk: fc.boolean() }) },
);

/** Every Shopify line and fulfillment ID an order ever had, from its webhooks. */
function idsOf(bodies: unknown[]): Set<string> {
  const ids = new Set<string>();
  for (const body of bodies as {
    line_items?: { id: number }[];
    fulfillments?: { id: number }[];
    id?: number;
  }[]) {
    for (const line of body.line_items ?? []) ids.add(String(line.id));
    for (const f of body.fulfillments ?? []) ids.add(String(f.id));
    if (body.id !== undefined && body.line_items === undefined) ids.add(String(body.id)); // a fulfillment webhook
  }
  return ids;
}

describe("links bound to their provider store, property-based", () => {
  // The fixed seed is the regression case, then the seeds that found a bug (PROPERTY_SEED=random
  // explores a new one).
  it.each(propertySeeds(20261124, [1247702260, 1685126965]))(
    "never lets a provider order receive another Shopify order's data ($label)",
    async ({ seed, regression }) => {
      const pipeline = await startPipeline({
        sandbox: { stores: [1001, 1002] },
        // Twelve histories a minute on one store outrun the provider's 100 calls a minute; the
        // budget is not what this property is about (a job waiting for it outlasts the drain).
        env: { SYNC_ATTEMPTS: "5", PROVIDER_RATE_LIMIT: AMPLE_BUDGET.env.PROVIDER_RATE_LIMIT },
      });
      let run = 0;
      const seen = { forget: 0, lose: 0, switch: 0, retired: 0 };
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.array(actionArbitrary, { minLength: 1, maxLength: 4 }), {
              minLength: ORDERS,
              maxLength: ORDERS,
            }),
            fc.array(eventArbitrary, { minLength: 6, maxLength: 24 }),
            async (actions, events) => {
              run++;
              const orders = actions.map((a, i) => orderHistory(run * 100 + i, a));
              const sent = orders.map(() => 0);
              // An order's own ID counts too: the mapping keys a synthetic line by it.
              const owned = orders.map(
                (o) => new Set([String(o.model.id), ...idsOf(o.deliveries.map((d) => d.body))]),
              );
              let store = (await pipeline.ctx.shops.getShop(TEST_SHOP))?.storeId ?? 1001;
              const providerIdOf = (i: number) =>
                pipeline.sandbox.state.orders.find(store, String(orders[i]?.model.id))?.orderId;

              for (const event of events) {
                if (event.kind === "step") {
                  const history = orders[event.order];
                  const next = history?.deliveries[sent[event.order] ?? 0];
                  if (!history || !next) continue;
                  sent[event.order] = (sent[event.order] ?? 0) + 1;
                  const id = `${run}-${event.order}-${next.webhookId}`;
                  expect(
                    (await pipeline.send(next.topic, next.body, { webhookId: id, eventId: id }))
                      .status,
                  ).toBe(200);
                } else if (event.kind === "forget") {
                  const id = providerIdOf(event.order);
                  if (id !== undefined) pipeline.sandbox.state.orders.forget(id);
                  seen.forget++;
                } else if (event.kind === "lose") {
                  pipeline.sandbox.state.orders.loseEverything();
                  seen.lose++;
                } else {
                  store = store === 1001 ? 1002 : 1001;
                  await pipeline.ctx.shops.updateSettings(TEST_SHOP, { storeId: store });
                  // The settings page retires at once; a job finds any link left and retires it.
                  if (event.bulk) {
                    await pipeline.ctx.links.retireOutside(
                      TEST_SHOP,
                      { storeId: store, providerBaseUrl: null },
                      "switch",
                    );
                  }
                  seen.switch++;
                }
                await pipeline.drain(30_000);

                // At every point: each provider order holds only its own Shopify order's lines and
                // fulfillments, and no store holds a Shopify order twice.
                for (const stored of pipeline.sandbox.state.orders.all) {
                  const mine = orders.findIndex((o) => String(o.model.id) === stored.sourceOrderId);
                  if (mine < 0) continue;
                  const foreign = [
                    ...stored.lineItems.map((l) => l.sourceLineItemId),
                    ...stored.fulfillments.map((f) => f.sourceFulfillmentId),
                  ].filter((id) => !owned[mine]?.has(id));
                  expect(
                    foreign,
                    `provider order ${stored.orderId} of ${stored.sourceOrderId}`,
                  ).toEqual([]);
                }
                const keys = pipeline.sandbox.state.orders.all.map(
                  (o) => `${o.storeId}:${o.sourceOrderId}`,
                );
                expect(new Set(keys).size).toBe(keys.length);
              }

              // Every order changes once more (a note): the current store then holds each exactly.
              // Except the note of an order the current store already holds canceled: the
              // provider's orders are immutable once canceled, so the connector writes nothing
              // more to it (docs/mapping.md) and the provider keeps the note it was canceled with.
              for (const [i, { model }] of orders.entries()) {
                if ((sent[i] ?? 0) === 0) continue;
                const note = `final ${run}-${i}`;
                const immutable =
                  pipeline.sandbox.state.orders.find(store, String(model.id))?.canceled === true;
                model.updatedAt = new Date(Date.parse(model.updatedAt) + 3_600_000).toISOString();
                const body = orderPayload({ ...model, note });
                if (!immutable) model.note = note;
                const id = `${run}-${i}-final`;
                await pipeline.send("orders/updated", body, {
                  webhookId: id,
                  eventId: id,
                });
              }
              await pipeline.drain(30_000);
              // Webhooks not yet sent never happened for the provider: compare with what was sent.
              // A canceled order is never written again (the provider's orders are immutable once
              // canceled), so one the provider forgot stays forgotten: compared where it is held.
              const models = orders
                .filter((_, i) => (sent[i] ?? 0) === orders[i]?.deliveries.length)
                .map((o) => o.model)
                .filter(
                  (m) => !m.cancelledAt || pipeline.sandbox.state.orders.find(store, String(m.id)),
                );
              const report = compareProjections(
                models,
                pipeline.sandbox.state.orders.all.filter(
                  (o) =>
                    o.storeId === store && models.some((m) => String(m.id) === o.sourceOrderId),
                ),
              );
              expect(report.wrong).toEqual([]);
              expect(report.duplicated).toEqual([]);
              expect(report.lost).toEqual([]);
              expect(await pipeline.ctx.queues.deadLetter.count()).toBe(0);
            },
          ),
          { numRuns: 12, seed, endOnFailure: true },
        );
        seen.retired = (await pipeline.ctx.links.retired(TEST_SHOP)).length;
        // The fixed seed's run went through what it claims to survive (a random one may not).
        if (regression) {
          expect(seen.forget).toBeGreaterThan(0);
          expect(seen.lose).toBeGreaterThan(0);
          expect(seen.switch).toBeGreaterThan(0);
          expect(seen.retired).toBeGreaterThan(0);
        }
        console.log(
          `link integrity (seed ${seed}): ${run} histories, ${seen.forget} forgotten orders, ${seen.lose} provider restarts without state, ${seen.switch} store switches, ${seen.retired} links retired`,
        );
      } finally {
        await pipeline.close();
      }
    },
    240_000,
  );
});
