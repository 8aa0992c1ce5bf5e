import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  lineHashOf,
  type OrderLinks,
  type PlanInput,
  planSync,
  type SourceOrder,
} from "../../src/sync/index.ts";
import { applyPlan, fakeIds } from "./apply-plan.ts";
import { arbitrarySettings, sourceOrderArbitrary } from "./arbitraries.ts";
import { planInput } from "./factories.ts";

const sendable = sourceOrderArbitrary({ sendable: true });
const inputOf = (order: SourceOrder): PlanInput => planInput(order, arbitrarySettings(true));

/** Live provider lines by Shopify line, with the hash of the body they were created from. */
const liveLines = (links: OrderLinks | null) =>
  (links?.lineItems ?? [])
    .filter((l) => l.canceledAt === null)
    .map((l) => [l.sourceLineItemId, l.hash])
    .sort();

describe("planSync (properties)", () => {
  it("plans nothing once the plan for a new order has been applied", () => {
    fc.assert(
      fc.property(sendable, (order) => {
        const input = inputOf(order);
        const ops = planSync(input, null);
        expect(ops[0]?.kind).toBe("createOrder");
        expect(ops.filter((o) => o.kind === "createOrder")).toHaveLength(1);
        expect(planSync(input, applyPlan(null, ops))).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it("makes one call for a new open order without fulfillments", () => {
    fc.assert(
      fc.property(sendable, (order) => {
        const input = inputOf({ ...order, cancelledAt: null, fulfillments: [] });
        expect(planSync(input, null).map((o) => o.kind)).toEqual(["createOrder"]);
      }),
    );
  });

  it("converges from any earlier state: after one plan is applied, replanning yields nothing", () => {
    fc.assert(
      fc.property(fc.array(sendable, { minLength: 2, maxLength: 4 }), (versions) => {
        const ids = fakeIds();
        let links: OrderLinks | null = null;
        for (const version of versions) {
          const input = inputOf(version);
          links = applyPlan(links, planSync(input, links), ids);
          expect(planSync(input, links)).toEqual([]);
        }
        const last = inputOf(versions.at(-1) as SourceOrder);
        const firstCanceled = versions.findIndex((v) => v.cancelledAt !== null);
        expect(links?.canceledAt !== null).toBe(firstCanceled !== -1);
        if (firstCanceled === -1) {
          // The provider holds exactly the lines of the latest version, each as last mapped.
          expect(liveLines(links)).toEqual(
            last.order.lineItems.map((l) => [l.sourceLineItemId, lineHashOf(l)]).sort(),
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  it("resumes an interrupted plan with exactly the calls that had not run, never repeating one", () => {
    fc.assert(
      fc.property(
        fc.array(sendable, { minLength: 1, maxLength: 3 }),
        sendable,
        fc.double({ min: 0, max: 1, noNaN: true }),
        (history, target, cut) => {
          const ids = fakeIds();
          let links: OrderLinks | null = null;
          for (const version of history)
            links = applyPlan(links, planSync(inputOf(version), links), ids);
          const input = inputOf(target);
          const ops = planSync(input, links);
          const done = Math.floor(ops.length * cut);
          const crashed = applyPlan(links, ops.slice(0, done), ids);
          const resumed = planSync(input, crashed);
          expect(resumed).toEqual(ops.slice(done));
          expect(planSync(input, applyPlan(crashed, resumed, ids))).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
