import type { OrderSource } from "../shopify/index.ts";
import { updatedWindowQuery } from "../shopify/index.ts";
import type { SourceOrder } from "../sync/source-order.ts";

/**
 * Where a walk through a shop's orders stands: the current time window's start, the cursor
 * inside it, and how many objects this window has paginated. Shopify stops paginating a query
 * at 25,000 objects, so after WINDOW_OBJECTS the walk starts a new query from the last
 * `updatedAt` seen (inclusive: the orders at the boundary are read twice, which reconciling
 * makes harmless).
 */
export interface PagerCursor {
  windowSince: string | null;
  after: string | null;
  inWindow: number;
}

export const WINDOW_OBJECTS = 20_000;

export const firstCursor = (since: string | null): PagerCursor => ({
  windowSince: since,
  after: null,
  inWindow: 0,
});

export async function nextPage(
  source: OrderSource,
  cursor: PagerCursor,
  until: string | null,
  windowObjects = WINDOW_OBJECTS,
): Promise<{ orders: SourceOrder[]; next: PagerCursor | null }> {
  const page = await source.page({
    query: updatedWindowQuery(cursor.windowSince, until),
    after: cursor.after,
  });
  const { orders, pageInfo } = page;
  if (!pageInfo.hasNextPage) return { orders, next: null };
  const inWindow = cursor.inWindow + orders.length;
  const last = orders.at(-1);
  if (inWindow >= windowObjects && last) {
    return { orders, next: { windowSince: last.updatedAt, after: null, inWindow: 0 } };
  }
  return { orders, next: { windowSince: cursor.windowSince, after: pageInfo.endCursor, inWindow } };
}
