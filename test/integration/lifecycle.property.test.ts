import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LinkRepository } from "../../src/store/index.ts";
import { actionArbitrary, orderHistory } from "../helpers/order-lifecycle.ts";
import { compareProjections } from "../helpers/order-projection.ts";
import { DEPLOYMENTS, startPipeline } from "../helpers/pipeline.ts";
import { propertySeeds } from "../helpers/property-seeds.ts";

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

describe.each(DEPLOYMENTS)(
  "order lifecycles, property-based, against the sandbox over HTTP ($name)",
  ({ redis, database }) => {
    // The fixed seed is the regression case; PROPERTY_SEED=random explores a new one (fewer runs).
    it.each(propertySeeds(20261122))(
      "leaves the provider holding exactly each order's latest state: no duplicate, no lost change ($label)",
      async ({ seed, regression }) => {
        let crashDice = 0;
        let crashes = 0;
        const pipeline = await startPipeline({
          redis,
          database,
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
              fc.array(actionArbitrary, { minLength: 1, maxLength: 8 }),
              fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 20, maxLength: 20 }),
              fc.infiniteStream(fc.double({ min: 0, max: 1, noNaN: true })),
              async (actions, copies, order) => {
                orderSeq++;
                const { model, deliveries } = orderHistory(orderSeq, actions);

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
                  const response = await pipeline.send(d.topic, d.body, {
                    webhookId: id,
                    eventId: id,
                  });
                  expect(response.status).toBe(200);
                }
                await pipeline.drain(60_000);

                const report = compareProjections(
                  [model],
                  pipeline.sandbox.state.orders.all.filter(
                    (o) => o.sourceOrderId === String(model.id),
                  ),
                );
                expect(report.lost).toEqual([]);
                expect(report.duplicated).toEqual([]);
                expect(report.wrong).toEqual([]);
                expect(report.ok).toBe(1);
                const dead = await pipeline.ctx.queues.deadLetter.count();
                expect(dead).toBe(0);
              },
            ),
            { numRuns: regression ? 25 : 10, seed },
          );
          // The fixed seed's run must really have gone through both kinds of failure it claims to
          // survive (a random one may not).
          if (regression) {
            expect(crashes).toBeGreaterThan(0);
            expect(pipeline.sandbox.state.counters.faults).toBeGreaterThan(0);
          }
        } finally {
          await pipeline.close();
        }
      },
      240_000,
    );
  },
);
