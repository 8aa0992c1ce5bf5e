import { seededRandom } from "@connector/provider-sandbox/faults.ts";
import fc from "fast-check";
import { actionArbitrary, orderHistory } from "../../helpers/order-lifecycle.ts";
import {
  fulfillmentPayload,
  type ModelFulfillment,
  type ModelOrder,
  orderPayload,
} from "../../helpers/shopify-order-builder.ts";
import type { WebhookEvent } from "./driver.ts";

export interface Workload {
  models: ModelOrder[];
  events: WebhookEvent[];
  /**
   * The fewest provider calls that can produce every order's final state (one create, one call
   * per fulfillment, one cancel): exact for `fulfilledOrders`, a lower bound for histories with
   * edits (each intermediate state that gets synced costs its own calls).
   */
  minimumCalls: number;
}

const finalStateCalls = (m: ModelOrder) =>
  1 + m.fulfillments.length + (m.cancelledAt !== null ? 1 : 0);

function shuffled<T>(items: T[], seed: number): T[] {
  const random = seededRandom(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * Orders with random merchant histories (edits, line changes, fulfillments, tracking, cancels),
 * their webhooks shuffled across orders and shops (Shopify does not promise any order).
 */
export function lifecycleWorkload(options: {
  orders: number;
  shops: string[];
  seed: number;
  firstSeq?: number;
}): Workload {
  const histories = fc.sample(fc.array(actionArbitrary, { minLength: 1, maxLength: 6 }), {
    numRuns: options.orders,
    seed: options.seed,
  });
  const models: ModelOrder[] = [];
  const events: WebhookEvent[] = [];
  histories.forEach((actions, i) => {
    const seq = (options.firstSeq ?? 1) + i;
    const shop = options.shops[i % options.shops.length] as string;
    const { model, deliveries } = orderHistory(seq, actions);
    models.push(model);
    for (const d of deliveries) {
      const id = `${seq}-${d.webhookId}`;
      events.push({
        shop,
        topic: d.topic,
        body: JSON.stringify(d.body),
        webhookId: id,
        eventId: id,
        sourceOrderId: String(model.id),
      });
    }
  });
  return {
    models,
    events: shuffled(events, options.seed),
    minimumCalls: models.reduce((sum, m) => sum + finalStateCalls(m), 0),
  };
}

/**
 * Orders that are created and then fulfilled (one to three fulfillments each), with no edit in
 * between: whatever the timing, the minimum is exactly one create and one call per fulfillment.
 */
export function fulfilledOrdersWorkload(options: {
  orders: number;
  shops: string[];
  seed: number;
  firstSeq?: number;
}): Workload {
  const random = seededRandom(options.seed);
  const models: ModelOrder[] = [];
  const events: WebhookEvent[] = [];
  for (let i = 0; i < options.orders; i++) {
    const seq = (options.firstSeq ?? 1) + i;
    const shop = options.shops[i % options.shops.length] as string;
    const { model } = orderHistory(seq, []);
    const sourceOrderId = String(model.id);
    const push = (topic: string, body: unknown, id: string) =>
      events.push({
        shop,
        topic,
        body: JSON.stringify(body),
        webhookId: id,
        eventId: id,
        sourceOrderId,
      });
    push("orders/create", orderPayload(model), `${seq}-create`);
    const count = 1 + Math.floor(random() * 3);
    for (let k = 0; k < count; k++) {
      const at = new Date(Date.parse(model.createdAt) + (k + 1) * 60_000).toISOString();
      const f: ModelFulfillment = {
        id: seq * 1000 + 500 + k,
        status: "success",
        trackingNumber: `1Z${String(seq).padStart(6, "0")}${k}`,
        shipmentStatus: "in_transit",
        lineIds: model.lines.map((l) => l.id),
        createdAt: at,
        updatedAt: at,
      };
      model.fulfillments.push(f);
      push("fulfillments/create", fulfillmentPayload(model, f), `${seq}-f${k}`);
    }
    models.push(model);
  }
  return {
    models,
    events: shuffled(events, options.seed),
    minimumCalls: models.reduce((sum, m) => sum + finalStateCalls(m), 0),
  };
}

/** The size of every scenario: `CHAOS_SCALE=10 npm run test:chaos` for a nightly-size run. */
export const CHAOS_SCALE = Math.max(0.1, Number(process.env.CHAOS_SCALE ?? "1") || 1);
export const scaled = (n: number) => Math.max(5, Math.round(n * CHAOS_SCALE));
