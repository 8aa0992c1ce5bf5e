import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureLogs } from "../helpers/captured-logs.ts";
import { scanLogs } from "../helpers/log-scan.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, SHOPIFY_SECRET, startPipeline } from "../helpers/pipeline.ts";
import { propertySeeds } from "../helpers/property-seeds.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * Hostile but validly signed order webhooks through the real receiver and worker (real Redis,
 * SQLite, the sandbox over HTTP): every one is answered 200 and either syncs or lands in the
 * dead-letter queue with a reason; no job fails, none is lost, the worker keeps running, and the
 * logs hold none of the customer data or secrets that went through.
 */
const EMAIL = "hostile.buyer+x@example.com";
const PHONE = "+1 (703) 555-0142";

const oddText = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "\u202eevil\u202c",
    "zero\u200bwidth",
    "🛡️📦🚚",
    "\ud800",
    "é".normalize("NFD"),
    "Ω≈ç√∫˜µ≤≥÷",
    "<script>alert(1)</script>",
    "'; DROP TABLE order_links; --",
    "x".repeat(5_000),
  ),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 20 }),
);
const oddMoney = fc.oneof(
  fc.constantFrom("-1.00", "-0.01", "0", "1e309", "NaN", "Infinity", "99999999999999999999.99"),
  fc.constantFrom("12.345", "1,000.00", "", " 5 ", "0x10", "1e-7"),
  fc.double({ noNaN: false }),
  fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }),
);
const oddDate = fc.constantFrom(
  "2026-02-30T25:61:00Z",
  "not a date",
  "0000-00-00T00:00:00Z",
  "",
  "9999-12-31T23:59:59Z",
  "1970-01-01T00:00:00Z",
  "2026-11-01",
  "2026-11-01T15:00:00+99:00",
);
const oddPhone = fc.constantFrom("+", "abc", "+1 000", "0".repeat(40), "☎ 555", "+999 1234", "");
const oddAny = fc.oneof(
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.constant([]),
  fc.constant({}),
  oddText,
  oddMoney,
);

type Mutation = { path: string; value: unknown };
const at = (path: string, value: fc.Arbitrary<unknown>): fc.Arbitrary<Mutation> =>
  value.map((v) => ({ path, value: v }));

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  at("email", fc.oneof(oddText, fc.constant(null))),
  at("customer", fc.oneof(fc.constant(null), fc.constant({}), fc.constant("customer"))),
  at("customer.email", oddAny),
  at("customer.first_name", oddAny),
  at("customer.phone", oddPhone),
  at("phone", oddPhone),
  at("billing_address", fc.oneof(fc.constant(null), fc.constant({}))),
  at("shipping_address", fc.oneof(fc.constant(null), fc.constant([]))),
  at("shipping_address.phone", oddPhone),
  at("shipping_address.country_code", fc.oneof(oddText, fc.constant("ZZ"), fc.constant(null))),
  at("shipping_address.zip", oddAny),
  at("shipping_address.address1", oddText),
  at("line_items", fc.oneof(fc.constant([]), fc.constant(null), fc.constant("lines"))),
  at("line_items.0.price", oddMoney),
  at("line_items.0.price_set", oddAny),
  at("line_items.0.quantity", fc.oneof(oddMoney, fc.constant(-3), fc.constant(1e9))),
  at("line_items.0.current_quantity", fc.oneof(fc.constant(-1), fc.constant(null))),
  at("line_items.0.title", oddText),
  at("line_items.0.sku", oddAny),
  at("line_items.0.id", oddAny),
  at("line_items.0.tax_lines", oddAny),
  at("current_total_price_set", oddAny),
  at("current_total_price_set.shop_money.amount", oddMoney),
  at("current_subtotal_price_set.shop_money.amount", oddMoney),
  at("current_total_tax_set.shop_money.amount", oddMoney),
  at("total_shipping_price_set.shop_money.amount", oddMoney),
  at("total_price", oddMoney),
  at("created_at", oddDate),
  at("updated_at", oddDate),
  at("processed_at", oddDate),
  at("cancelled_at", oddDate),
  at("currency", fc.oneof(oddText, fc.constantFrom("XXX", "usd", "EUR"))),
  at("name", oddText),
  at("note", oddText),
  at("fulfillments", fc.oneof(fc.constant(null), fc.constant([{}]), fc.constant([{ id: "x" }]))),
  at("shipping_lines", oddAny),
  at("id", fc.constantFrom(null, "", -1, 0, "abc", 1.5, {})),
);

/** Sets (or deletes, for undefined) a dotted path, creating nothing that is not there. */
function mutate(body: Record<string, unknown>, { path, value }: Mutation) {
  const keys = path.split(".");
  let node: unknown = body;
  for (const key of keys.slice(0, -1)) {
    if (node === null || typeof node !== "object") return;
    node = (node as Record<string, unknown>)[key];
  }
  if (node === null || typeof node !== "object") return;
  const last = keys.at(-1) as string;
  if (value === undefined) delete (node as Record<string, unknown>)[last];
  else (node as Record<string, unknown>)[last] = value;
}

const logs = captureLogs("hostile-payloads");
let pipeline: Pipeline;
/** Sync jobs the workers completed (none is kept to count afterwards). */
let completed = 0;
beforeAll(async () => {
  pipeline = await startPipeline({
    workers: 2,
    env: { SYNC_ATTEMPTS: "3", SYNC_RETRY_DELAY_MS: "20" },
    logDestination: logs.destination,
  });
  for (const handle of pipeline.workers) {
    await handle.ready;
    for (const worker of handle.workers.values()) {
      worker.on("completed", () => {
        completed++;
      });
    }
  }
});
afterAll(async () => {
  await pipeline.close();
  logs.remove();
});

let seq = 0;
let queued = 0;
const outcomes: Record<string, number> = {};

describe("hostile but validly signed order payloads", () => {
  // The fixed seed is the regression case, then the seeds that found a bug (PROPERTY_SEED=random
  // explores a new one).
  it.each(propertySeeds(20261123))(
    "each syncs or is dead-lettered with a reason; no job fails or is lost; the worker keeps running ($label)",
    async ({ seed }) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(mutation, { minLength: 1, maxLength: 4 }),
          fc.option(fc.integer({ min: 200, max: 900 }), { freq: 8 }),
          async (mutations, hugeLineCount) => {
            seq++;
            const model = newModelOrder(70_000 + seq, 70_000_000 + seq * 1_000);
            model.email = EMAIL;
            const body = orderPayload(model) as unknown as Record<string, unknown>;
            (body.customer as Record<string, unknown>).phone = PHONE;
            if (hugeLineCount) {
              const line = (body.line_items as Record<string, unknown>[])[0] as Record<
                string,
                unknown
              >;
              body.line_items = Array.from({ length: hugeLineCount }, (_, i) => ({
                ...line,
                id: model.id * 10 + i,
              }));
            }
            for (const m of mutations) mutate(body, m);
            const id = randomUUID();
            const response = await pipeline.send("orders/create", body, {
              webhookId: id,
              eventId: id,
            });
            expect(response.status).toBe(200);
            const { outcome } = (await response.json()) as { outcome: string };
            await pipeline.drain(30_000);

            const sourceOrderId = String(model.id);
            const synced = pipeline.sandbox.state.orders.all.filter(
              (o) => o.sourceOrderId === sourceOrderId,
            );
            const dead = await pipeline.ctx.queues.deadLetter.getJobs(["waiting"]);
            const mine = dead.filter(
              (j) =>
                j.data.orderId === sourceOrderId ||
                (j.data.orderId === null && j.id?.includes(id.replaceAll(":", "_"))),
            );
            let verdict: string;
            if (outcome === "dead-lettered") {
              expect(mine).toHaveLength(1);
              verdict = "payload dead-lettered";
            } else {
              expect(outcome).toBe("queued");
              queued++;
              expect(synced.length + mine.length).toBe(1);
              verdict =
                synced.length === 1 ? "synced" : `dead-lettered (${mine[0]?.data.category})`;
            }
            for (const j of mine) {
              // A reason an operator can act on, and never an unexpected crash retried to death.
              expect(j.data.reason.length).toBeGreaterThan(10);
              expect(["payload", "mapping", "config", "provider-validation"]).toContain(
                j.data.category,
              );
            }
            outcomes[verdict] = (outcomes[verdict] ?? 0) + 1;
            const counts = await pipeline.ctx.queues.sync.getJobCounts("failed");
            expect(counts.failed).toBe(0);
            expect(pipeline.workers.every((w) => w.isRunning())).toBe(true);
          },
        ),
        { numRuns: Number(process.env.HOSTILE_RUNS ?? 60), seed },
      );
      console.log(`hostile payload outcomes (seed ${seed}): ${JSON.stringify(outcomes)}`);
      // Job accounting: one job per accepted webhook (each is its own order), every one completed
      // (counted over the seeds so far: they share the pipeline). Completed jobs are removed as
      // they finish, so the workers' "completed" events count them.
      expect(completed).toBe(queued);
      const jobs = await pipeline.ctx.queues.sync.getJobCounts(
        "completed",
        "failed",
        "active",
        "wait",
        "prioritized",
        "delayed",
      );
      expect(jobs).toEqual({
        completed: 0,
        failed: 0,
        active: 0,
        wait: 0,
        prioritized: 0,
        delayed: 0,
      });
      expect(Object.keys(outcomes).length).toBeGreaterThan(1);
    },
    60_000 + Number(process.env.HOSTILE_RUNS ?? 60) * 2_000,
  );

  it("leaves no email, phone or secret of those payloads in the logs", () => {
    const text = logs.read();
    expect(text.length).toBeGreaterThan(0);
    const leaks = scanLogs(
      [{ source: "hostile-payloads", text }],
      [
        { kind: "email", value: EMAIL },
        { kind: "phone", value: "555-0142" },
        { kind: "phone", value: "555-0100" },
        { kind: "shopify secret", value: SHOPIFY_SECRET },
        { kind: "provider secret", value: pipeline.sandbox.clientSecret },
      ],
    );
    expect(leaks.slice(0, 5)).toEqual([]);
  });
});
