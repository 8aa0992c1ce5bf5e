import type { Order, ProviderClient } from "../provider/index.ts";
import {
  ProviderConflictError,
  type ProviderLineItemId,
  type ProviderOrderId,
  ProviderRateLimitError,
  type ProviderStoreId,
} from "../provider/index.ts";
import type { IntentRow, LinkRepository, SyncedCheck } from "../store/index.ts";
import { canonicalHash, orderLevel, type SyncOp, sameJson } from "../sync/index.ts";

/** What an operation calls at the provider (a shop's ProviderClient, or a scripted one in tests). */
export type OpProvider = Pick<
  ProviderClient,
  | "createOrder"
  | "getOrder"
  | "findOrderBySourceId"
  | "updateOrder"
  | "cancelOrder"
  | "addLineItem"
  | "cancelLineItem"
  | "createFulfillment"
>;

/** What an operation reads and writes of the links: the intent protocol and each op's effect. */
export type OpLinks = Pick<
  LinkRepository,
  | "beginIntent"
  | "releaseIntent"
  | "loadLinks"
  | "recordOrderCreated"
  | "recordOrderUpdated"
  | "recordOrderCanceled"
  | "recordLineItemAdded"
  | "recordLineItemCanceled"
  | "recordFulfillmentUpserted"
>;

export interface OpContext {
  shop: string;
  sourceOrderId: string;
  orderName: string;
  storeId: ProviderStoreId;
  /** The provider environment (API base URL) the order is written to: with storeId, its space. */
  providerBaseUrl: string;
  /** The provider order, once created (every op but createOrder needs it). */
  orderId: ProviderOrderId | null;
  customerEmail: string | undefined;
  /** False when the order is known to have no failure record to clear (read with its state). */
  clearFailure?: boolean;
}

/**
 * Runs one planned operation against the provider with the intent protocol
 * (docs/principles.md, principle 4): the intent row is written before the call, the effect
 * (service IDs, hashes) in one transaction with the intent's completion the moment the answer
 * comes back.
 *
 * An intent that was started before and never completed means an earlier attempt may have
 * reached the provider (crash, timeout, dropped response). Creates are then looked up first
 * instead of sent again, so a lost answer never becomes a second order or line item. Updates,
 * cancels and fulfillment upserts are idempotent at the provider and are simply sent again.
 *
 * `synced` (given for the last planned call) lets the effect's transaction also mark the order
 * synced when the links it leaves need nothing more; `synced: true` in the result says it did.
 */
export async function executeOp(
  client: OpProvider,
  links: OpLinks,
  op: SyncOp,
  ctx: OpContext,
  synced?: SyncedCheck,
  /** The intent, when the caller began it (before taking its slot, so the call leaves at once). */
  begun?: IntentRow,
): Promise<{ orderId: ProviderOrderId; synced: boolean }> {
  const intent = begun ?? (await links.beginIntent(ctx.shop, ctx.sourceOrderId, op.key, op.kind));
  try {
    return await runOp(client, links, op, ctx, intent.attempts > 1, synced);
  } catch (error) {
    // A 429 is answered before the provider does anything: this attempt cannot have created
    // anything, so it must not make the next attempt pay for a lookup.
    if (error instanceof ProviderRateLimitError) {
      await links.releaseIntent(ctx.shop, ctx.sourceOrderId, op.key);
    }
    throw error;
  }
}

async function runOp(
  client: OpProvider,
  links: OpLinks,
  op: SyncOp,
  ctx: OpContext,
  resumed: boolean,
  check: SyncedCheck | undefined,
): Promise<{ orderId: ProviderOrderId; synced: boolean }> {
  // What every effect is recorded under: the order and the operation's intent key.
  const keyed = { shop: ctx.shop, sourceOrderId: ctx.sourceOrderId, key: op.key };
  switch (op.kind) {
    case "createOrder": {
      let order: Order | null = resumed ? await findExisting(client, ctx) : null;
      if (!order) {
        try {
          order = await client.createOrder(op.body);
        } catch (error) {
          // Already there (our lost answer, or another process): adopt it instead of failing.
          if (!(error instanceof ProviderConflictError)) throw error;
          order = error.existingOrderId
            ? await client.getOrder(ctx.storeId, error.existingOrderId)
            : await findExisting(client, ctx);
          if (!order) throw error;
        }
      }
      const orderId = order.orderId as ProviderOrderId;
      // An adopted order already canceled there is immutable: linked as canceled, so that
      // nothing more is planned for it (an update would only be refused).
      const canceledAt = canceledOn(order);
      const created = await links.recordOrderCreated(
        {
          ...keyed,
          storeId: ctx.storeId,
          providerBaseUrl: ctx.providerBaseUrl,
          orderId,
          orderHash: adoptedOrderHash(order, op),
          orderName: ctx.orderName,
          lineItems: adoptedLineItems(order, op),
          ...(ctx.clearFailure === false ? { clearFailure: false } : {}),
        },
        canceledAt ? undefined : check,
      );
      if (!canceledAt) return { orderId, synced: created };
      return { orderId, synced: await links.recordOrderCanceled({ ...keyed, canceledAt }, check) };
    }
    case "updateOrder": {
      const orderId = requireOrder(ctx);
      requireOwnOrder(await client.updateOrder(ctx.storeId, orderId, op.body), ctx);
      const synced = await links.recordOrderUpdated(
        {
          ...keyed,
          orderHash: op.orderHash,
          replaces: op.replaces,
        },
        check,
      );
      return { orderId, synced };
    }
    case "cancelLineItem": {
      const orderId = requireOrder(ctx);
      await client.cancelLineItem(ctx.storeId, orderId, op.lineItemId, op.body);
      const synced = await links.recordLineItemCanceled(
        {
          ...keyed,
          lineItemId: op.lineItemId,
          canceledAt: op.body.sourceCanceledOn ?? new Date().toISOString(),
        },
        check,
      );
      return { orderId, synced };
    }
    case "addLineItem": {
      const orderId = requireOrder(ctx);
      let lineItemId: ProviderLineItemId | null = resumed
        ? await findLiveLineItem(client, ctx, orderId, op.sourceLineItemId, links)
        : null;
      if (lineItemId === null) {
        try {
          lineItemId = (await client.addLineItem(ctx.storeId, orderId, op.body))
            .lineItemId as ProviderLineItemId;
        } catch (error) {
          if (!(error instanceof ProviderConflictError)) throw error;
          lineItemId =
            (error.existingLineItemId as ProviderLineItemId | undefined) ??
            (await findLiveLineItem(client, ctx, orderId, op.sourceLineItemId, links));
          if (lineItemId === null) throw error;
        }
      }
      const synced = await links.recordLineItemAdded(
        {
          ...keyed,
          sourceLineItemId: op.sourceLineItemId,
          lineItemId,
          hash: op.hash,
        },
        check,
      );
      return { orderId, synced };
    }
    case "upsertFulfillment": {
      const orderId = requireOrder(ctx);
      const { fulfillment } = await client.createFulfillment(ctx.storeId, orderId, op.body);
      const synced = await links.recordFulfillmentUpserted(
        {
          ...keyed,
          sourceFulfillmentId: op.sourceFulfillmentId,
          fulfillmentId: fulfillment.fulfillmentId,
          hash: op.hash,
        },
        check,
      );
      return { orderId, synced };
    }
    case "cancelOrder": {
      const orderId = requireOrder(ctx);
      requireOwnOrder(await client.cancelOrder(ctx.storeId, orderId, op.body), ctx);
      const synced = await links.recordOrderCanceled(
        {
          ...keyed,
          canceledAt: op.body.sourceCanceledOn ?? new Date().toISOString(),
        },
        check,
      );
      return { orderId, synced };
    }
  }
}

/**
 * The linked provider order answered as another Shopify order's: the link points at the wrong
 * order (the provider reused an ID, or the link was carried into another store). Nothing more
 * may be written through it; retrying cannot fix it.
 */
export class LinkMismatchError extends Error {
  override name = "LinkMismatchError";
  constructor(
    readonly orderId: number,
    readonly answeredFor: string,
    readonly expected: string,
  ) {
    super(
      `link points at another order: provider order ${orderId} belongs to Shopify order ${answeredFor}, not ${expected}`,
    );
  }
}

/** An order write's answer must name this order's sourceOrderId when it names one. */
function requireOwnOrder(answer: Order | null, ctx: OpContext): void {
  if (answer && answer.sourceOrderId !== ctx.sourceOrderId) {
    throw new LinkMismatchError(answer.orderId, answer.sourceOrderId, ctx.sourceOrderId);
  }
}

/** When the provider order was canceled, if it is: its `sourceCanceledOn`, or its `canceled` flag. */
function canceledOn(order: Order): string | null {
  if (order.sourceCanceledOn) return order.sourceCanceledOn;
  return (order as { canceled?: unknown }).canceled === true
    ? (order.updatedOn ?? new Date().toISOString())
    : null;
}

function requireOrder(ctx: OpContext): ProviderOrderId {
  if (ctx.orderId === null) throw new Error("planned an order operation before the order exists");
  return ctx.orderId;
}

async function findExisting(client: OpProvider, ctx: OpContext): Promise<Order | null> {
  return client.findOrderBySourceId(ctx.storeId, ctx.sourceOrderId, {
    ...(ctx.customerEmail ? { customerEmail: ctx.customerEmail } : {}),
    orderNameOrNumber: ctx.orderName,
  });
}

/** A live provider line item for this source line that our links do not know yet. */
async function findLiveLineItem(
  client: OpProvider,
  ctx: OpContext,
  orderId: ProviderOrderId,
  sourceLineItemId: string,
  links: OpLinks,
): Promise<ProviderLineItemId | null> {
  const known = new Set(
    ((await links.loadLinks(ctx.shop, ctx.sourceOrderId))?.lineItems ?? []).map((l) =>
      Number(l.lineItemId),
    ),
  );
  const order = await client.getOrder(ctx.storeId, orderId);
  const live = order.lineItems.find(
    (item) =>
      item.sourceLineItemId === sourceLineItemId &&
      !item.sourceCanceledOn &&
      !known.has(item.lineItemId),
  );
  return live ? (live.lineItemId as ProviderLineItemId) : null;
}

/**
 * The order we adopt may be exactly what we sent (a lost answer) or an older state sent by an
 * earlier attempt. Its hash is trusted only when every order-level field we mean to send is
 * already there; otherwise an empty hash makes the next plan send an update.
 */
function adoptedOrderHash(order: Order, op: Extract<SyncOp, { kind: "createOrder" }>): string {
  const wanted = orderLevel(op.body) as Record<string, unknown>;
  const have = order as Record<string, unknown>;
  const same = Object.entries(wanted).every(([key, value]) => sameJson(value, have[key]));
  return same ? op.orderHash : "";
}

/** Live provider line items matched to our lines; a different item gets no hash (replaced next). */
function adoptedLineItems(order: Order, op: Extract<SyncOp, { kind: "createOrder" }>) {
  const wanted = new Map(op.body.lineItems.map((l) => [l.sourceLineItemId, l]));
  return order.lineItems
    .filter((item) => !item.sourceCanceledOn)
    .map((item) => {
      const mine = wanted.get(item.sourceLineItemId);
      const have = item as Record<string, unknown>;
      const same =
        mine !== undefined &&
        Object.entries(mine).every(([key, value]) => sameJson(value, have[key]));
      return {
        sourceLineItemId: item.sourceLineItemId,
        lineItemId: item.lineItemId as ProviderLineItemId,
        hash: same ? (op.lineItemHashes[item.sourceLineItemId] ?? canonicalHash(mine)) : "",
      };
    });
}
