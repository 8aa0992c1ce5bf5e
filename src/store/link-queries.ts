import { and, asc, count, desc, eq, gt, max, or } from "drizzle-orm";
import type { ProviderOrderId, ProviderStoreId } from "../provider/schemas.ts";
import type { FailureCategory, FailureField, FailureRecord } from "../sync/failure.ts";
import type { OrderLinks } from "../sync/links.ts";
import { type Db, writeTogether } from "./database.ts";

export interface IntentRow {
  status: "pending" | "done";
  attempts: number;
  resultId: number | null;
}

export interface Keyed {
  shop: string;
  sourceOrderId: string;
  key: string;
}

export type OrderCreated = Keyed & {
  storeId: number;
  /** The provider environment (API base URL): with storeId, the space the link points into. */
  providerBaseUrl: string;
  orderId: number;
  orderHash: string;
  orderName: string;
  lineItems: { sourceLineItemId: string; lineItemId: number; hash: string }[];
  /** False when the order is known to have no failure record (read with its state). */
  clearFailure?: boolean;
};
/**
 * An update's record: its hash replaces `replaces`, the hash the update was planned from. A hash
 * forgotten since (`forgetOrderHash`: another order's job wrote through this order's provider ID)
 * is left as it is, so the job plans the update again and sends this order's fields after that
 * write, not before it.
 */
export type OrderUpdated = Keyed & { orderHash: string; replaces: string };
export type LineItemAdded = Keyed & { sourceLineItemId: string; lineItemId: number; hash: string };
export type LineItemCanceled = Keyed & { lineItemId: number; canceledAt: string };
export type FulfillmentUpserted = Keyed & {
  sourceFulfillmentId: string;
  fulfillmentId: number;
  hash: string;
};
export type OrderCanceled = Keyed & { canceledAt: string };

/**
 * Lets the write of an order's last planned call also mark the order synced, in the same
 * transaction (one commit less per order): `done` is asked with the links as that write leaves
 * them (the sync planner: nothing left to send), and only then is the order marked.
 */
export interface SyncedCheck {
  /** The Shopify version (updated_at) the synced mark records. */
  version: string;
  done(links: OrderLinks | null): boolean;
  /** False when the order is known to have no failure record to clear (read with its state). */
  clearFailure?: boolean;
}

export const now = () => new Date().toISOString();

/** A failure row's `fields` column (JSON; null before 0008) as the fields it names. */
const fieldsOf = (json: string | null): FailureField[] =>
  JSON.parse(json ?? "[]") as FailureField[];

/**
 * Whether the check says the order is done. A check that throws says no: the effect of a call
 * the provider already applied must commit whatever the check does.
 */
export function settled(check: SyncedCheck, links: () => OrderLinks | null): boolean {
  try {
    return check.done(links());
  } catch {
    return false;
  }
}

/** Where a link points: the provider environment (API base URL) and store. */
export interface LinkSpace {
  storeId: number;
  /** Null for a link made before spaces were recorded. */
  providerBaseUrl: string | null;
}

/**
 * What a sync job reads of an order before planning, in one statement: its links, where they
 * point, and how its last sync failed (each was a read of its own).
 */
export interface OrderState {
  links: OrderLinks | null;
  /** Where the links point, or null when unlinked. */
  space: LinkSpace | null;
  /** How the order's last sync failed, when not cleared by a success yet. */
  failure: "failed" | "dead-lettered" | null;
}

/** The order row of `OrderState`'s read, with the space and the failure joined. */
export interface StateRow {
  storeId: number | null;
  orderId: number | null;
  orderHash: string | null;
  syncedVersion: string | null;
  canceledAt: string | null;
  providerBaseUrl: string | null;
  /** `discarded` reads as `dead-lettered` in the state (see the schema). */
  failure: "failed" | "dead-lettered" | "discarded" | null;
}

/**
 * A failure row's result as the order's state reads it: `discarded` is dead-lettered with its
 * entry discarded, and the order is still not at the provider (see the schema).
 */
export function failureOf(
  result: "failed" | "dead-lettered" | "discarded" | null | undefined,
): "failed" | "dead-lettered" | null {
  return result === "discarded" ? "dead-lettered" : (result ?? null);
}

/** `OrderState` from its row and, when the order is linked, its line-item and fulfillment links. */
export function orderStateOf(
  sourceOrderId: string,
  row: StateRow | undefined,
  children: () => Pick<OrderLinks, "lineItems" | "fulfillments">,
): OrderState {
  const failure = failureOf(row?.failure);
  if (!row || row.storeId === null || row.orderId === null) {
    return { links: null, space: null, failure };
  }
  const { lineItems, fulfillments } = children();
  return {
    links: orderLinksOf(sourceOrderId, row as OrderRow, lineItems, fulfillments),
    space: { storeId: row.storeId, providerBaseUrl: row.providerBaseUrl },
    failure,
  };
}

export interface OrderRow {
  storeId: number;
  orderId: number;
  orderHash: string;
  syncedVersion: string | null;
  canceledAt: string | null;
}

/** An order's links from its order row and its line-item and fulfillment link rows. */
export function orderLinksOf(
  sourceOrderId: string,
  order: OrderRow,
  lineItems: OrderLinks["lineItems"],
  fulfillments: OrderLinks["fulfillments"],
): OrderLinks {
  return {
    storeId: order.storeId as ProviderStoreId,
    sourceOrderId,
    orderId: order.orderId as ProviderOrderId,
    orderHash: order.orderHash,
    syncedVersion: order.syncedVersion,
    canceledAt: order.canceledAt,
    lineItems,
    fulfillments,
  };
}

/**
 * The statements of the hot path, one text for both engines: named parameters (`@shop`), which
 * better-sqlite3 takes as they are and the Postgres store numbers (`$1`); camelCase names are
 * quoted, and parameters whose type nothing else fixes are cast, as Postgres needs.
 */
export const LINK_SQL = {
  beginIntent: `INSERT INTO intents (shop, source_order_id, key, kind, status, attempts, started_at)
         VALUES (@shop, @sourceOrderId, @key, @kind, 'pending', 1, @at)
         ON CONFLICT (shop, source_order_id, key) DO UPDATE SET
           attempts = CASE WHEN intents.status = 'done' THEN 1 ELSE intents.attempts + 1 END,
           started_at = CASE WHEN intents.status = 'done' THEN @at ELSE intents.started_at END,
           status = 'pending', completed_at = NULL, result_id = NULL
         RETURNING status, attempts, result_id AS "resultId"`,
  releaseIntent: `UPDATE intents SET attempts = attempts - 1
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND key = @key
           AND status = 'pending' AND attempts > 0`,
  completeIntent: `UPDATE intents SET status = 'done', result_id = @resultId, completed_at = @at
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND key = @key`,
  markSynced: `UPDATE order_links SET synced_version = @version, last_result = 'synced', last_error = NULL, last_synced_at = @at
         WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  clearFailure:
    "DELETE FROM order_failures WHERE shop = @shop AND source_order_id = @sourceOrderId",
  lastFailure:
    "SELECT result FROM order_failures WHERE shop = @shop AND source_order_id = @sourceOrderId",
  upsertOrderLink: `INSERT INTO order_links (shop, source_order_id, store_id, provider_base_url, order_id, order_name, order_hash, created_at)
         VALUES (@shop, @sourceOrderId, @storeId, @providerBaseUrl, @orderId, @orderName, @orderHash, @at)
         ON CONFLICT (shop, source_order_id) DO UPDATE SET
           order_id = excluded.order_id, order_hash = excluded.order_hash, store_id = excluded.store_id,
           provider_base_url = excluded.provider_base_url`,
  sameProviderOrder: `SELECT shop, source_order_id AS "sourceOrderId" FROM order_links
         WHERE order_id = @orderId
           AND (provider_base_url IS NULL OR provider_base_url = @providerBaseUrl)
           AND NOT (shop = @shop AND source_order_id = @sourceOrderId)`,
  selectSpace: `SELECT store_id AS "storeId", provider_base_url AS "providerBaseUrl"
         FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  upsertLineItemLink: `INSERT INTO line_item_links (shop, source_order_id, source_line_item_id, line_item_id, hash, created_at)
         VALUES (@shop, @sourceOrderId, @sourceLineItemId, @lineItemId, @hash, @at)
         ON CONFLICT (shop, source_order_id, line_item_id) DO UPDATE SET
           hash = excluded.hash, canceled_at = NULL`,
  setOrderHash: `UPDATE order_links SET order_hash = @orderHash
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND order_hash = @replaces`,
  forgetOrderHash: `UPDATE order_links SET order_hash = @forgotten
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND order_id = @orderId`,
  cancelLineItem: `UPDATE line_item_links SET canceled_at = @canceledAt
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND line_item_id = @lineItemId`,
  upsertFulfillmentLink: `INSERT INTO fulfillment_links (shop, source_order_id, source_fulfillment_id, fulfillment_id, hash, updated_at)
         VALUES (@shop, @sourceOrderId, @sourceFulfillmentId, @fulfillmentId, @hash, @at)
         ON CONFLICT (shop, source_order_id, source_fulfillment_id) DO UPDATE SET
           fulfillment_id = excluded.fulfillment_id, hash = excluded.hash, updated_at = excluded.updated_at`,
  cancelOrder: `UPDATE order_links SET canceled_at = @canceledAt
         WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  selectOrder: `SELECT store_id AS "storeId", order_id AS "orderId", order_hash AS "orderHash",
           synced_version AS "syncedVersion", canceled_at AS "canceledAt"
         FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  // One row whether or not the order is linked or failed (the keys joined to both).
  selectState: `SELECT o.store_id AS "storeId", o.order_id AS "orderId", o.order_hash AS "orderHash",
           o.synced_version AS "syncedVersion", o.canceled_at AS "canceledAt",
           o.provider_base_url AS "providerBaseUrl", f.result AS "failure"
         FROM (SELECT CAST(@shop AS TEXT) AS shop, CAST(@sourceOrderId AS TEXT) AS source_order_id) k
         LEFT JOIN order_links o ON o.shop = k.shop AND o.source_order_id = k.source_order_id
         LEFT JOIN order_failures f ON f.shop = k.shop AND f.source_order_id = k.source_order_id`,
  selectLines: `SELECT source_line_item_id AS "sourceLineItemId", line_item_id AS "lineItemId", hash,
           canceled_at AS "canceledAt"
         FROM line_item_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  selectFulfillments: `SELECT source_fulfillment_id AS "sourceFulfillmentId", fulfillment_id AS "fulfillmentId", hash
         FROM fulfillment_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  // Retiring: the order-level link to the record, every link and intent of the order removed.
  archive: `INSERT INTO retired_order_links (shop, source_order_id, provider_base_url, store_id, order_id, order_name, reason, retired_at)
       SELECT shop, source_order_id, provider_base_url, store_id, order_id, order_name, CAST(@reason AS TEXT), CAST(@at AS TEXT)
       FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
  retireLines:
    "DELETE FROM line_item_links WHERE shop = @shop AND source_order_id = @sourceOrderId",
  retireFulfillments:
    "DELETE FROM fulfillment_links WHERE shop = @shop AND source_order_id = @sourceOrderId",
  retireIntents: "DELETE FROM intents WHERE shop = @shop AND source_order_id = @sourceOrderId",
  retireOrder: "DELETE FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId",
  outside: `SELECT source_order_id AS "sourceOrderId" FROM order_links
       WHERE shop = @shop AND (store_id <> @storeId OR (CAST(@providerBaseUrl AS TEXT) IS NOT NULL
         AND (provider_base_url IS NULL OR provider_base_url <> @providerBaseUrl)))`,
};

/**
 * The links between Shopify and provider records, and the intent rows that make every provider
 * write recoverable (docs/principles.md, principle 4). Each `record…` call writes the effect and
 * completes its intent in one transaction: either both are there after a crash, or neither.
 * Given a `SyncedCheck`, the same transaction marks the order synced when nothing is left to
 * send, and the call returns whether it did.
 *
 * This base holds the queries drizzle's builder writes for both engines; the hot path (intents,
 * effects, the links a sync reads) is `LinkRepository` (link-repository.ts), whose writes are
 * programs (link-effects.ts) run by each engine's executor.
 */
export abstract class LinkQueries {
  constructor(protected readonly db: Db) {}

  /** The links the shop retired, newest first. */
  async retired(
    shop: string,
  ): Promise<{ sourceOrderId: string; storeId: number; orderId: number; reason: string }[]> {
    const { retiredOrderLinks } = this.db.t;
    return this.db.orm
      .select({
        sourceOrderId: retiredOrderLinks.sourceOrderId,
        storeId: retiredOrderLinks.storeId,
        orderId: retiredOrderLinks.orderId,
        reason: retiredOrderLinks.reason,
      })
      .from(retiredOrderLinks)
      .where(eq(retiredOrderLinks.shop, shop))
      .orderBy(desc(retiredOrderLinks.id));
  }

  /** The link of an order by its name ("#1001" or "1001"). */
  async findByOrderName(
    shop: string,
    name: string,
  ): Promise<{ sourceOrderId: string; orderId: number } | null> {
    const { orderLinks } = this.db.t;
    const wanted = name.startsWith("#") ? name : `#${name}`;
    const [row] = await this.db.orm
      .select({ sourceOrderId: orderLinks.sourceOrderId, orderId: orderLinks.orderId })
      .from(orderLinks)
      .where(and(eq(orderLinks.shop, shop), eq(orderLinks.orderName, wanted)))
      .limit(1);
    return row ?? null;
  }

  /**
   * An order's recorded failure, by its Shopify ID or its name (#1077), for `connector orders
   * show` when the provider has no order for it. Null when none is recorded.
   */
  async failureOf(shop: string, idOrName: string) {
    const { orderFailures } = this.db.t;
    const name = idOrName.startsWith("#") ? idOrName : `#${idOrName}`;
    const [row] = await this.db.orm
      .select()
      .from(orderFailures)
      .where(
        and(
          eq(orderFailures.shop, shop),
          or(eq(orderFailures.sourceOrderId, idOrName), eq(orderFailures.orderName, name)),
        ),
      )
      .orderBy(desc(orderFailures.failedAt))
      .limit(1);
    return row ?? null;
  }

  async getOrderLinkRow(shop: string, sourceOrderId: string) {
    const { orderLinks } = this.db.t;
    const [row] = await this.db.orm
      .select()
      .from(orderLinks)
      .where(and(eq(orderLinks.shop, shop), eq(orderLinks.sourceOrderId, sourceOrderId)));
    return row ?? null;
  }

  /** Records a failure, whether or not the provider has the order yet. No customer data. */
  async markFailed(
    shop: string,
    sourceOrderId: string,
    result: "failed" | "dead-lettered",
    failure: FailureRecord,
    orderName: string | null = null,
  ): Promise<void> {
    const { orderFailures, orderLinks } = this.db.t;
    const message = failure.message.slice(0, 2_000);
    const category = failure.category;
    const fields = JSON.stringify(failure.fields);
    const at = now();
    // Both rows or neither: the failure record and the link's last result agree.
    await writeTogether(this.db, (tx) => [
      tx
        .insert(orderFailures)
        .values({
          shop,
          sourceOrderId,
          orderName,
          result,
          error: message,
          category,
          fields,
          failedAt: at,
        })
        .onConflictDoUpdate({
          target: [orderFailures.shop, orderFailures.sourceOrderId],
          set: {
            result,
            error: message,
            category,
            fields,
            failedAt: at,
            ...(orderName ? { orderName } : {}),
          },
        }),
      tx
        .update(orderLinks)
        .set({ lastResult: result, lastError: message })
        .where(and(eq(orderLinks.shop, shop), eq(orderLinks.sourceOrderId, sourceOrderId))),
    ]);
  }

  /**
   * Records that an operator discarded the order's dead letter: the failure stays (the order is
   * still not at the provider), but a restore of the dead-letter queue leaves it out.
   */
  async markDiscarded(shop: string, sourceOrderId: string): Promise<void> {
    const { orderFailures } = this.db.t;
    await this.db.orm
      .update(orderFailures)
      .set({ result: "discarded" })
      .where(
        and(
          eq(orderFailures.shop, shop),
          eq(orderFailures.sourceOrderId, sourceOrderId),
          eq(orderFailures.result, "dead-lettered"),
        ),
      );
  }

  /**
   * The shop's dead-lettered orders whose entry an operator has not discarded, after the given
   * Shopify order ID, in ID order: a page of what the dead-letter queue should hold.
   */
  async deadLetteredFailures(shop: string, after: string | null, limit: number) {
    const { orderFailures } = this.db.t;
    const rows = await this.db.orm
      .select({
        sourceOrderId: orderFailures.sourceOrderId,
        orderName: orderFailures.orderName,
        error: orderFailures.error,
        category: orderFailures.category,
        fields: orderFailures.fields,
        failedAt: orderFailures.failedAt,
      })
      .from(orderFailures)
      .where(
        and(
          eq(orderFailures.shop, shop),
          eq(orderFailures.result, "dead-lettered"),
          after === null ? undefined : gt(orderFailures.sourceOrderId, after),
        ),
      )
      .orderBy(asc(orderFailures.sourceOrderId))
      .limit(limit);
    return rows.map((r) => ({
      ...r,
      category: r.category as FailureCategory | null,
      fields: fieldsOf(r.fields),
    }));
  }

  /**
   * Records the trace ID of the order's latest sync (written only when traces are on), for
   * `connector orders show`. An order with no link yet has nowhere to keep it.
   */
  async recordTraceId(shop: string, sourceOrderId: string, traceId: string): Promise<void> {
    const { orderLinks } = this.db.t;
    await this.db.orm
      .update(orderLinks)
      .set({ lastTraceId: traceId })
      .where(and(eq(orderLinks.shop, shop), eq(orderLinks.sourceOrderId, sourceOrderId)));
  }

  /** Counts for status pages: orders synced, and orders whose last attempt failed. */
  async countByResult(
    shop: string,
  ): Promise<{ synced: number; failed: number; deadLettered: number }> {
    const { orderFailures, orderLinks } = this.db.t;
    const [synced] = await this.db.orm
      .select({ n: count() })
      .from(orderLinks)
      .where(and(eq(orderLinks.shop, shop), eq(orderLinks.lastResult, "synced")));
    const failures = await this.db.orm
      .select({ result: orderFailures.result, n: count() })
      .from(orderFailures)
      .where(eq(orderFailures.shop, shop))
      .groupBy(orderFailures.result);
    return {
      synced: synced?.n ?? 0,
      failed: failures.find((f) => f.result === "failed")?.n ?? 0,
      // A discarded entry's order is still dead-lettered: it is not at the provider.
      deadLettered: failures.filter((f) => f.result !== "failed").reduce((sum, f) => sum + f.n, 0),
    };
  }

  /** The shop's latest failures, newest first, with the order's name when known. */
  async latestFailures(shop: string, limit: number) {
    const { orderFailures, orderLinks } = this.db.t;
    const rows = await this.db.orm
      .select({
        sourceOrderId: orderFailures.sourceOrderId,
        error: orderFailures.error,
        category: orderFailures.category,
        fields: orderFailures.fields,
        failedAt: orderFailures.failedAt,
        orderName: orderLinks.orderName,
        failedName: orderFailures.orderName,
      })
      .from(orderFailures)
      .leftJoin(
        orderLinks,
        and(
          eq(orderLinks.shop, orderFailures.shop),
          eq(orderLinks.sourceOrderId, orderFailures.sourceOrderId),
        ),
      )
      .where(eq(orderFailures.shop, shop))
      .orderBy(desc(orderFailures.failedAt))
      .limit(limit);
    return rows.map((r) => ({
      sourceOrderId: r.sourceOrderId,
      failedAt: r.failedAt,
      orderName: r.orderName ?? r.failedName,
      /** Null for a failure recorded before categories were kept (shown as it was worded). */
      failure:
        r.category === null
          ? null
          : ({
              message: r.error,
              category: r.category as FailureCategory,
              fields: fieldsOf(r.fields),
            } satisfies FailureRecord),
      error: r.error,
    }));
  }

  /** How many of the shop's orders last failed in this category. */
  async countFailures(shop: string, category: FailureCategory): Promise<number> {
    const { orderFailures } = this.db.t;
    const [row] = await this.db.orm
      .select({ n: count() })
      .from(orderFailures)
      .where(and(eq(orderFailures.shop, shop), eq(orderFailures.category, category)));
    return row?.n ?? 0;
  }

  /** When each shop's latest order was synced. */
  async lastSyncedAtByShop(): Promise<Map<string, string | null>> {
    const { orderLinks } = this.db.t;
    const rows = await this.db.orm
      .select({ shop: orderLinks.shop, at: max(orderLinks.lastSyncedAt) })
      .from(orderLinks)
      .groupBy(orderLinks.shop);
    return new Map(rows.map((r) => [r.shop, r.at]));
  }
}
