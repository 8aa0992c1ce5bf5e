import type { StoredOrder } from "@connector/provider-sandbox/orders.ts";
import { lineTaxCents, type ModelOrder, orderTotals } from "./shopify-order-builder.ts";

/** What the provider must hold for one Shopify order: its latest state, once. */
export interface OrderProjection {
  sourceOrderId: string;
  totalMoney: number;
  canceled: boolean;
  notes: string | null;
  /** Live line items: [sourceLineItemId, quantity, price, tax], sorted. */
  lines: [string, number, number, number][];
  /** Fulfillments: [sourceFulfillmentId, tracking number, shipment status], sorted. */
  fulfillments: [string, string | null, string | null][];
}

export function expectedProjection(model: ModelOrder): OrderProjection {
  return {
    sourceOrderId: String(model.id),
    totalMoney: orderTotals(model).total / 100,
    canceled: model.cancelledAt !== null,
    // Sent as written (surrounding spaces kept); a blank note is no note.
    notes: model.note?.trim() ? model.note : null,
    lines: model.lines
      .filter((l) => l.currentQuantity > 0)
      .map((l): [string, number, number, number] => [
        String(l.id),
        l.currentQuantity,
        l.price / 100,
        Math.round((lineTaxCents(l, model.taxBps, l.quantity) * l.currentQuantity) / l.quantity) /
          100,
      ])
      .sort(),
    fulfillments: model.fulfillments
      .map((f): [string, string | null, string | null] => [
        String(f.id),
        f.trackingNumber,
        f.shipmentStatus,
      ])
      .sort(),
  };
}

export function actualProjection(order: StoredOrder): OrderProjection {
  return {
    sourceOrderId: order.sourceOrderId,
    totalMoney: order.totalMoney,
    canceled: order.canceled,
    notes: order.notes || null,
    lines: order.lineItems
      .filter((l) => !l.sourceCanceledOn)
      .map((l): [string, number, number, number] => [
        l.sourceLineItemId,
        l.quantity,
        l.price,
        l.tax,
      ])
      .sort(),
    fulfillments: order.fulfillments
      .map((f): [string, string | null, string | null] => [
        f.sourceFulfillmentId,
        f.trackingInfoNumber ?? null,
        f.shipmentStatus ?? null,
      ])
      .sort(),
  };
}

export type OrderVerdict = "ok" | "lost" | "duplicated" | "wrong";

export interface ProjectionReport {
  orders: number;
  ok: number;
  lost: string[];
  duplicated: string[];
  wrong: { sourceOrderId: string; expected: OrderProjection; actual: OrderProjection }[];
  /** Provider orders no Shopify order asked for. */
  unexpected: string[];
}

/**
 * Compares the provider's orders with the expected projection of every Shopify order: lost (no
 * provider order), duplicated (two provider orders, or two live line items or fulfillments for
 * one Shopify line or fulfillment), wrong (a field differs).
 */
export function compareProjections(
  models: ModelOrder[],
  providerOrders: StoredOrder[],
): ProjectionReport {
  const bySource = new Map<string, StoredOrder[]>();
  for (const o of providerOrders) {
    const list = bySource.get(o.sourceOrderId) ?? [];
    list.push(o);
    bySource.set(o.sourceOrderId, list);
  }
  const report: ProjectionReport = {
    orders: models.length,
    ok: 0,
    lost: [],
    duplicated: [],
    wrong: [],
    unexpected: [],
  };
  const wanted = new Set<string>();
  for (const model of models) {
    const id = String(model.id);
    wanted.add(id);
    const found = bySource.get(id) ?? [];
    const first = found[0];
    if (!first) {
      report.lost.push(id);
      continue;
    }
    const actual = actualProjection(first);
    const dupLines =
      new Set(actual.lines.map((l) => l[0])).size !== actual.lines.length ||
      new Set(actual.fulfillments.map((f) => f[0])).size !== actual.fulfillments.length;
    if (found.length > 1 || dupLines) {
      report.duplicated.push(id);
      continue;
    }
    const expected = expectedProjection(model);
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      report.wrong.push({ sourceOrderId: id, expected, actual });
      continue;
    }
    report.ok++;
  }
  for (const id of bySource.keys()) if (!wanted.has(id)) report.unexpected.push(id);
  return report;
}
