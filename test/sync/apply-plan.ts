import type {
  ProviderFulfillmentId,
  ProviderLineItemId,
  ProviderOrderId,
  ProviderStoreId,
} from "../../src/provider/schemas.ts";
import type { OrderLinks, SyncOp } from "../../src/sync/index.ts";

/** Hands out the provider IDs a simulated provider would assign, in sequence. */
export interface FakeIds {
  next(): number;
}

export function fakeIds(start = 1): FakeIds {
  let n = start;
  return { next: () => n++ };
}

const RECORDED_AT = "2026-11-30T00:00:00Z";

/**
 * The links as the executor records them after each op of a plan succeeded, computed without a
 * provider: a pure stand-in for "send, then write the link". Throws on an op that could not run
 * against the links it meets (an update before the order exists, a cancel of an unknown line),
 * so a plan in the wrong order fails the test.
 */
export function applyPlan(
  links: OrderLinks | null,
  ops: SyncOp[],
  ids: FakeIds = fakeIds(),
): OrderLinks | null {
  let out = links ? structuredClone(links) : null;
  for (const op of ops) {
    if (op.kind === "createOrder") {
      if (out) throw new Error("createOrder for an order the provider already has");
      out = {
        storeId: op.body.storeId as ProviderStoreId,
        sourceOrderId: op.body.sourceOrderId,
        orderId: ids.next() as ProviderOrderId,
        orderHash: op.orderHash,
        syncedVersion: null,
        canceledAt: null,
        lineItems: op.body.lineItems.map((l) => {
          const hash = op.lineItemHashes[l.sourceLineItemId];
          if (hash === undefined)
            throw new Error(`createOrder has no hash for line ${l.sourceLineItemId}`);
          return {
            sourceLineItemId: l.sourceLineItemId,
            lineItemId: ids.next() as ProviderLineItemId,
            hash,
            canceledAt: null,
          };
        }),
        fulfillments: [],
      };
      continue;
    }
    if (!out) throw new Error(`${op.kind} before the order was created`);
    if (out.canceledAt !== null) throw new Error(`${op.kind} on a canceled order`);
    switch (op.kind) {
      case "updateOrder":
        out.orderHash = op.orderHash;
        break;
      case "cancelLineItem": {
        const line = out.lineItems.find((l) => l.lineItemId === op.lineItemId);
        if (!line || line.canceledAt !== null) throw new Error(`no live line ${op.lineItemId}`);
        line.canceledAt = RECORDED_AT;
        break;
      }
      case "addLineItem":
        out.lineItems.push({
          sourceLineItemId: op.sourceLineItemId,
          lineItemId: ids.next() as ProviderLineItemId,
          hash: op.hash,
          canceledAt: null,
        });
        break;
      case "upsertFulfillment": {
        const known = out.fulfillments.find(
          (f) => f.sourceFulfillmentId === op.sourceFulfillmentId,
        );
        if (known) known.hash = op.hash;
        else
          out.fulfillments.push({
            sourceFulfillmentId: op.sourceFulfillmentId,
            fulfillmentId: ids.next() as ProviderFulfillmentId,
            hash: op.hash,
          });
        break;
      }
      case "cancelOrder":
        out.canceledAt = RECORDED_AT;
        break;
    }
  }
  return out;
}
