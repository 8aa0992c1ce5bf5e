import type { OrderRef } from "../sync/order-ref.ts";
import type { ShopDomain, SourceOrder } from "../sync/source-order.ts";
import type { ShopifyAdminClient } from "./admin-client.ts";
import { normalizeGraphqlOrder } from "./normalize-graphql.ts";
import {
  ORDER_LINES_QUERY,
  ORDER_QUERY,
  ORDER_VERSIONS_QUERY,
  ORDERS_COUNT_QUERY,
  ORDERS_PAGE_QUERY,
  ORDERS_PAGE_SIZE,
  VERSIONS_PAGE_SIZE,
} from "./order-query.ts";

/**
 * Reads orders from the Admin GraphQL API as SourceOrders: one by ID or name, pages of full
 * orders (backfill, resync by date), and pages of IDs and versions (the sweep).
 */
type Json = Record<string, unknown>;

interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

interface OrdersPage<T> {
  orders: { nodes: T[]; pageInfo: PageInfo };
}

export interface OrderPage {
  orders: SourceOrder[];
  pageInfo: PageInfo;
}

export interface OrderVersion {
  id: string;
  updatedAt: string;
}

/** Shopify's search syntax for a time window on updated_at (ISO instants, quoted). */
export function updatedWindowQuery(since?: string | null, until?: string | null): string {
  const terms: string[] = [];
  if (since) terms.push(`updated_at:>='${since}'`);
  if (until) terms.push(`updated_at:<'${until}'`);
  return terms.join(" AND ");
}

export class OrderSource {
  constructor(
    private readonly client: ShopifyAdminClient,
    private readonly shop: ShopDomain,
  ) {}

  /** The order by its ID, then by its name (digits are both: `1001` is `#1001`). */
  async findOrder(ref: OrderRef): Promise<SourceOrder | null> {
    if (ref.id !== null) {
      const found = await this.fetchOrder(ref.id);
      if (found) return found;
    }
    if (ref.name === null) return null;
    const name = ref.name;
    const { data } = await this.client.request<OrdersPage<Json>>(ORDERS_PAGE_QUERY, {
      first: 1,
      query: `name:'${name.replaceAll("'", "")}'`,
    });
    const node = data.orders.nodes[0];
    return node ? this.complete(node) : null;
  }

  async fetchOrder(id: string): Promise<SourceOrder | null> {
    const gid = id.startsWith("gid://") ? id : `gid://shopify/Order/${id}`;
    const { data } = await this.client.request<{ order: Json | null }>(ORDER_QUERY, { id: gid });
    return data.order ? this.complete(data.order) : null;
  }

  async page(options: {
    query: string;
    after?: string | null;
    first?: number;
  }): Promise<OrderPage> {
    const { data } = await this.client.request<OrdersPage<Json>>(ORDERS_PAGE_QUERY, {
      first: options.first ?? ORDERS_PAGE_SIZE,
      after: options.after ?? null,
      query: options.query || null,
    });
    const orders: SourceOrder[] = [];
    for (const node of data.orders.nodes) orders.push(await this.complete(node));
    return { orders, pageInfo: data.orders.pageInfo };
  }

  async count(query: string): Promise<number> {
    const { data } = await this.client.request<{ ordersCount: { count: number } | null }>(
      ORDERS_COUNT_QUERY,
      { query: query || null },
    );
    return data.ordersCount?.count ?? 0;
  }

  async versions(options: { query: string; after?: string | null }) {
    const { data } = await this.client.request<OrdersPage<OrderVersion>>(ORDER_VERSIONS_QUERY, {
      first: VERSIONS_PAGE_SIZE,
      after: options.after ?? null,
      query: options.query || null,
    });
    return {
      orders: data.orders.nodes.map((n) => ({
        id: n.id.replace(/^gid:\/\/shopify\/Order\//, ""),
        updatedAt: n.updatedAt,
      })),
      pageInfo: data.orders.pageInfo,
    };
  }

  /** Reads the lines beyond the first page of a large order, then normalizes it. */
  private async complete(node: Json): Promise<SourceOrder> {
    const lines = node.lineItems as { nodes: Json[]; pageInfo: PageInfo } | undefined;
    let pageInfo = lines?.pageInfo;
    const all = [...(lines?.nodes ?? [])];
    while (pageInfo?.hasNextPage) {
      const { data } = await this.client.request<{
        order: { lineItems: { nodes: Json[]; pageInfo: PageInfo } } | null;
      }>(ORDER_LINES_QUERY, { id: node.id, after: pageInfo.endCursor });
      if (!data.order) break;
      all.push(...data.order.lineItems.nodes);
      pageInfo = data.order.lineItems.pageInfo;
    }
    return normalizeGraphqlOrder(this.shop, {
      ...node,
      lineItems: { nodes: all, pageInfo: { hasNextPage: false, endCursor: null } },
    });
  }
}
