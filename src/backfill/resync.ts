import { INSTANT_FORMS, parseInstantText } from "../lib/instant.ts";
import { CONNECTOR, inSpan } from "../lib/tracing.ts";
import { type AdminClientFactory, OrderSource } from "../shopify/index.ts";
import type { ShopRecord } from "../store/index.ts";
import type { OrderRef } from "../sync/order-ref.ts";
import type { ShopDomain, SourceOrder } from "../sync/source-order.ts";
import { feedOrders, type OrderFeederDeps } from "./order-feeder.ts";
import { firstCursor, nextPage, type PagerCursor } from "./windowed-pager.ts";

export type ResyncTarget =
  | { kind: "order"; order: OrderRef }
  | { kind: "range"; since: string; until?: string }
  | { kind: "all" };

export interface ResyncDeps extends OrderFeederDeps {
  shopifyAdmin: AdminClientFactory;
}

export interface ResyncResult {
  /** Orders Shopify returned. */
  found: number;
  /** Of those, snapshots that were newer than the stored one (or new). */
  stored: number;
  /** Reconcile jobs queued at bulk priority. */
  queued: number;
  /** The order asked for when Shopify does not have it. */
  notFound?: string;
}

export class ResyncInputError extends Error {
  override name = "ResyncInputError";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** Parses a date (or date-time) given by an operator into an ISO instant. */
export function parseInstant(value: string, field: string): string {
  const ms = parseInstantText(value);
  if (ms === null) throw new ResyncInputError(field, `must be ${INSTANT_FORMS}: ${value}`);
  return new Date(ms).toISOString();
}

/**
 * Resync: reads the current state of one order, of the orders updated in a date range, or of
 * every order, from the Admin GraphQL API; stores each as the snapshot when newer, and queues
 * a reconcile at bulk priority (live webhooks go first). Level-triggered: an order the provider
 * already has as it is costs no provider call.
 */
export async function resync(
  deps: ResyncDeps,
  shop: ShopRecord,
  target: ResyncTarget,
  options: { onPage?: (found: number) => void; signal?: AbortSignal } = {},
): Promise<ResyncResult> {
  // Traces on: one span; the Admin reads and each queued job (its trace context) are its children.
  return inSpan(
    "resync",
    { attributes: { [CONNECTOR.shop]: shop.shop, "connector.resync.target": target.kind } },
    () => resyncOrders(deps, shop, target, options),
  );
}

async function resyncOrders(
  deps: ResyncDeps,
  shop: ShopRecord,
  target: ResyncTarget,
  options: { onPage?: (found: number) => void; signal?: AbortSignal },
): Promise<ResyncResult> {
  const source = new OrderSource(deps.shopifyAdmin.for(shop), shop.shop as ShopDomain);
  const feed = (orders: AsyncIterable<SourceOrder>) =>
    feedOrders(deps, shop, orders, {
      trigger: "resync",
      ...(options.signal ? { signal: options.signal } : {}),
    });
  if (target.kind === "order") {
    const order = await source.findOrder(target.order);
    if (!order) return { found: 0, stored: 0, queued: 0, notFound: target.order.text };
    const fed = await feed(
      (async function* () {
        yield order;
      })(),
    );
    return { found: 1, ...fed };
  }
  const until = target.kind === "range" ? (target.until ?? null) : null;
  let found = 0;
  // Pages are read only as fast as the feeder takes their orders (the provider budget).
  async function* pages() {
    let cursor: PagerCursor | null = firstCursor(target.kind === "range" ? target.since : null);
    while (cursor) {
      const page = await nextPage(source, cursor, until);
      yield* page.orders;
      found += page.orders.length;
      options.onPage?.(found);
      cursor = page.next;
    }
  }
  const fed = await feed(pages());
  return { found, ...fed };
}
