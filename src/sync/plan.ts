import type {
  FulfillmentWrite,
  LineItemCancel,
  LineItemWrite,
  OrderCancel,
  OrderCreate,
  OrderUpdate,
  ProviderLineItemId,
} from "../provider/schemas.ts";
import { canonicalHash } from "./hash.ts";
import type { OrderLinks } from "./links.ts";

/**
 * One provider call. `key` is the deterministic idempotency key of its intent row: the same
 * intent always gets the same key (`createOrder`, `updateOrder:<orderHash>`,
 * `cancelLineItem:<lineItemId>`, `addLineItem:<sourceLineItemId>:<hash>`,
 * `upsertFulfillment:<sourceFulfillmentId>:<hash>`, `cancelOrder`), so a retry after a crash
 * resumes the intent instead of repeating it.
 */
export type SyncOp =
  | {
      kind: "createOrder";
      key: string;
      body: OrderCreate;
      orderHash: string;
      lineItemHashes: Record<string, string>;
    }
  | {
      kind: "updateOrder";
      key: string;
      body: OrderUpdate;
      orderHash: string;
      /** The link's hash this update was planned from (the record replaces only that one). */
      replaces: string;
    }
  | {
      kind: "cancelLineItem";
      key: string;
      sourceLineItemId: string;
      lineItemId: ProviderLineItemId;
      body: LineItemCancel;
    }
  | {
      kind: "addLineItem";
      key: string;
      sourceLineItemId: string;
      body: LineItemWrite;
      hash: string;
    }
  | {
      kind: "upsertFulfillment";
      key: string;
      sourceFulfillmentId: string;
      body: FulfillmentWrite;
      hash: string;
    }
  | { kind: "cancelOrder"; key: string; body: OrderCancel };

export interface PlanInput {
  order: OrderCreate;
  fulfillments: FulfillmentWrite[];
  canceled: { reason: string | null; at: string } | null;
  /**
   * No line is left (MapResult's `linesGone`): `order.lineItems` only create the order. Then an
   * open order's live provider lines are canceled, and a canceled order's lines are left as they
   * are (the order's cancellation says the rest: no line call).
   */
  linesGone?: boolean;
}

/** The order-level fields: everything an update may carry (not line items, store or source id). */
export function orderLevel(order: OrderCreate): OrderUpdate {
  const { lineItems: _l, storeId: _s, sourceOrderId: _o, ...rest } = order;
  return rest;
}

/**
 * What decides whether the order needs an update: every order-level field but
 * `sourceUpdatedOn`, which changes with each Shopify update, also the ones the provider does not
 * care about (tags, payment status): those cost no call. It is sent with the next real update.
 */
export const orderHashOf = (order: OrderCreate) =>
  memo(order, () => {
    const { sourceUpdatedOn: _version, ...fields } = orderLevel(order);
    return canonicalHash(fields);
  });
export const lineHashOf = (line: LineItemWrite) => memo(line, () => canonicalHash(line));
export const fulfillmentHashOf = (f: FulfillmentWrite) => memo(f, () => canonicalHash(f));

/**
 * Hashes remembered per object: a sync job plans again after every call with the same mapped
 * order, and hashing it was the largest cost of planning. Mapped orders are never mutated
 * (mapping builds new objects, planning only reads them), so an object's hash cannot go stale.
 */
const hashes = new WeakMap<object, string>();
function memo(value: object, hash: () => string): string {
  let known = hashes.get(value);
  if (known === undefined) {
    known = hash();
    hashes.set(value, known);
  }
  return known;
}

const cancelBody = (canceled: NonNullable<PlanInput["canceled"]>): OrderCancel => ({
  sourceCanceledOn: canceled.at,
  ...(canceled.reason ? { canceledReason: canceled.reason } : {}),
});

/**
 * Links (what the provider has) + the mapped order (what it should have) → the minimal list of
 * provider operations, in the order they must run: the order-level update, line-item cancels,
 * line-item adds, fulfillments, and the order's cancellation last. Pure.
 *
 * - No links: create the order with every line, then its fulfillments (and cancel it if it is
 *   canceled: every order is sent, so the provider knows it existed).
 * - Links of a canceled order: nothing; a canceled order is immutable at the provider.
 * - Line items are immutable: a changed line is canceled and a replacement added. With
 *   `linesGone` none is wanted: every live one is canceled (after the create, for a new order).
 * - A fulfillment is sent when new or changed (the provider upserts by sourceFulfillmentId);
 *   one cancelled in Shopify is sent only if the provider already has it.
 * - An unchanged order plans nothing; a new order without fulfillments plans one call.
 * - The order-level update goes first although it changes the totals before the lines change:
 *   the provider checks the totals of the order alone, not against its line items.
 * - A line cancel carries the order's cancellation time, else its source update time.
 */
export function planSync(input: PlanInput, links: OrderLinks | null): SyncOp[] {
  const ops: SyncOp[] = [];
  if (links === null) {
    const lineItemHashes = Object.fromEntries(
      input.order.lineItems.map((l) => [l.sourceLineItemId, lineHashOf(l)]),
    );
    ops.push({
      kind: "createOrder",
      key: "createOrder",
      body: input.order,
      orderHash: orderHashOf(input.order),
      lineItemHashes,
    });
    ops.push(...fulfillmentOps(input.fulfillments, new Map()));
    if (input.canceled)
      ops.push({ kind: "cancelOrder", key: "cancelOrder", body: cancelBody(input.canceled) });
    return ops;
  }
  if (links.canceledAt !== null) return [];

  const orderHash = orderHashOf(input.order);
  if (orderHash !== links.orderHash) {
    ops.push({
      kind: "updateOrder",
      key: `updateOrder:${orderHash}`,
      body: orderLevel(input.order),
      orderHash,
      replaces: links.orderHash,
    });
  }

  // Line items are immutable at the provider: a live one whose line changed (quantity, price…)
  // or is gone is canceled, and every wanted line without an unchanged live one is added. At
  // most one live provider line is kept per Shopify line, so a duplicate could never survive.
  // No line left: an open order's live lines are all canceled; a canceled order's are left to its
  // cancellation (restocked lines: no line call).
  const lineCalls = !(input.linesGone && input.canceled);
  const wantedLines = input.linesGone ? [] : input.order.lineItems;
  const wanted = new Map(wantedLines.map((l) => [l.sourceLineItemId, l]));
  const kept = new Set<string>();
  const cancelOn = input.canceled?.at ?? input.order.sourceUpdatedOn;
  for (const link of lineCalls ? links.lineItems : []) {
    if (link.canceledAt !== null) continue;
    const line = wanted.get(link.sourceLineItemId);
    if (line && !kept.has(link.sourceLineItemId) && lineHashOf(line) === link.hash) {
      kept.add(link.sourceLineItemId);
      continue;
    }
    ops.push({
      kind: "cancelLineItem",
      key: `cancelLineItem:${link.lineItemId}`,
      sourceLineItemId: link.sourceLineItemId,
      lineItemId: link.lineItemId,
      body: cancelOn ? { sourceCanceledOn: cancelOn } : {},
    });
  }
  const adds: SyncOp[] = [];
  for (const line of wantedLines) {
    if (kept.has(line.sourceLineItemId)) continue;
    const hash = lineHashOf(line);
    adds.push({
      kind: "addLineItem",
      key: `addLineItem:${line.sourceLineItemId}:${hash}`,
      sourceLineItemId: line.sourceLineItemId,
      body: line,
      hash,
    });
  }
  ops.push(...adds);
  ops.push(
    ...fulfillmentOps(
      input.fulfillments,
      new Map(links.fulfillments.map((f) => [f.sourceFulfillmentId, f.hash])),
    ),
  );
  if (input.canceled)
    ops.push({ kind: "cancelOrder", key: "cancelOrder", body: cancelBody(input.canceled) });
  return ops;
}

function fulfillmentOps(fulfillments: FulfillmentWrite[], sent: Map<string, string>): SyncOp[] {
  return fulfillments.flatMap((body): SyncOp[] => {
    const hash = fulfillmentHashOf(body);
    const known = sent.get(body.sourceFulfillmentId);
    if (known === hash) return [];
    if (known === undefined && body.shipmentStatus === "cancelled") return [];
    return [
      {
        kind: "upsertFulfillment",
        key: `upsertFulfillment:${body.sourceFulfillmentId}:${hash}`,
        sourceFulfillmentId: body.sourceFulfillmentId,
        body,
        hash,
      },
    ];
  });
}
