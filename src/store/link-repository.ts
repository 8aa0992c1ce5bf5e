import { and, count, desc, eq, max } from "drizzle-orm";
import type { ProviderOrderId, ProviderStoreId } from "../provider/schemas.ts";
import type { FailureCategory, FailureField, FailureRecord } from "../sync/failure.ts";
import type { OrderLinks } from "../sync/links.ts";
import type { Db } from "./database.ts";
import { orderFailures, orderLinks, retiredOrderLinks } from "./schema.ts";

export interface IntentRow {
  status: "pending" | "done";
  attempts: number;
  resultId: number | null;
}

interface Keyed {
  shop: string;
  sourceOrderId: string;
  key: string;
}

type OrderCreated = Keyed & {
  storeId: number;
  /** The provider environment (API base URL): with storeId, the space the link points into. */
  providerBaseUrl: string;
  orderId: number;
  orderHash: string;
  orderName: string;
  lineItems: { sourceLineItemId: string; lineItemId: number; hash: string }[];
};
type OrderUpdated = Keyed & { orderHash: string };
type LineItemAdded = Keyed & { sourceLineItemId: string; lineItemId: number; hash: string };
type LineItemCanceled = Keyed & { lineItemId: number; canceledAt: string };
type FulfillmentUpserted = Keyed & {
  sourceFulfillmentId: string;
  fulfillmentId: number;
  hash: string;
};
type OrderCanceled = Keyed & { canceledAt: string };

/**
 * Lets the write of an order's last planned call also mark the order synced, in the same
 * transaction (one commit less per order): `done` is asked with the links as that write leaves
 * them (the sync planner: nothing left to send), and only then is the order marked.
 */
export interface SyncedCheck {
  /** The Shopify version (updated_at) the synced mark records. */
  version: string;
  done(links: OrderLinks | null): boolean;
}

const now = () => new Date().toISOString();

/**
 * Whether the check says the order is done. A check that throws says no: the effect of a call
 * the provider already applied must commit whatever the check does.
 */
function settled(check: SyncedCheck, links: () => OrderLinks | null): boolean {
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

interface OrderRow {
  storeId: number;
  orderId: number;
  orderHash: string;
  syncedVersion: string | null;
  canceledAt: string | null;
}

/**
 * The links between Shopify and provider records, and the intent rows that make every provider
 * write recoverable (docs/principles.md, principle 4). Each `record…` call writes the effect and completes
 * its intent in one transaction: either both are there after a crash, or neither. Given a
 * `SyncedCheck`, the same transaction marks the order synced when nothing is left to send, and
 * the call returns whether it did.
 */
export class LinkRepository {
  // Prepared once, as plain better-sqlite3 statements: the sync loop reads the links before every
  // provider call, and building the query each time cost more CPU than the rest of a job; drizzle's
  // row mapping was still a visible share after that (bench:worker profile).
  readonly #raw;
  readonly #tx;
  readonly #retire: (row: {
    shop: string;
    sourceOrderId: string;
    reason: string;
    at: string;
  }) => number;
  readonly #retireOutside: (
    row: LinkSpace & { shop: string; reason: string; at: string },
  ) => number;

  constructor(private readonly db: Db) {
    // The hot writes as plain prepared statements (SQL that reads the same on Postgres).
    this.#raw = {
      beginIntent: db.$client.prepare(
        `INSERT INTO intents (shop, source_order_id, key, kind, status, attempts, started_at)
         VALUES (@shop, @sourceOrderId, @key, @kind, 'pending', 1, @at)
         ON CONFLICT (shop, source_order_id, key) DO UPDATE SET
           attempts = CASE WHEN intents.status = 'done' THEN 1 ELSE intents.attempts + 1 END,
           started_at = CASE WHEN intents.status = 'done' THEN @at ELSE intents.started_at END,
           status = 'pending', completed_at = NULL, result_id = NULL
         RETURNING status, attempts, result_id AS resultId`,
      ),
      releaseIntent: db.$client.prepare(
        `UPDATE intents SET attempts = attempts - 1
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND key = @key
           AND status = 'pending' AND attempts > 0`,
      ),
      completeIntent: db.$client.prepare(
        `UPDATE intents SET status = 'done', result_id = @resultId, completed_at = @at
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND key = @key`,
      ),
      markSynced: db.$client.prepare(
        `UPDATE order_links SET synced_version = @version, last_result = 'synced', last_error = NULL, last_synced_at = @at
         WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
      clearFailure: db.$client.prepare(
        "DELETE FROM order_failures WHERE shop = @shop AND source_order_id = @sourceOrderId",
      ),
      lastFailure: db.$client.prepare(
        "SELECT result FROM order_failures WHERE shop = @shop AND source_order_id = @sourceOrderId",
      ),
      upsertOrderLink: db.$client.prepare(
        `INSERT INTO order_links (shop, source_order_id, store_id, provider_base_url, order_id, order_name, order_hash, created_at)
         VALUES (@shop, @sourceOrderId, @storeId, @providerBaseUrl, @orderId, @orderName, @orderHash, @at)
         ON CONFLICT (shop, source_order_id) DO UPDATE SET
           order_id = excluded.order_id, order_hash = excluded.order_hash, store_id = excluded.store_id,
           provider_base_url = excluded.provider_base_url`,
      ),
      sameProviderOrder: db.$client.prepare(
        `SELECT shop, source_order_id AS sourceOrderId FROM order_links
         WHERE order_id = @orderId
           AND (provider_base_url IS NULL OR provider_base_url = @providerBaseUrl)
           AND NOT (shop = @shop AND source_order_id = @sourceOrderId)`,
      ),
      selectSpace: db.$client.prepare(
        `SELECT store_id AS storeId, provider_base_url AS providerBaseUrl
         FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
      upsertLineItemLink: db.$client.prepare(
        `INSERT INTO line_item_links (shop, source_order_id, source_line_item_id, line_item_id, hash, created_at)
         VALUES (@shop, @sourceOrderId, @sourceLineItemId, @lineItemId, @hash, @at)
         ON CONFLICT (shop, source_order_id, line_item_id) DO UPDATE SET
           hash = excluded.hash, canceled_at = NULL`,
      ),
      setOrderHash: db.$client.prepare(
        `UPDATE order_links SET order_hash = @orderHash
         WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
      cancelLineItem: db.$client.prepare(
        `UPDATE line_item_links SET canceled_at = @canceledAt
         WHERE shop = @shop AND source_order_id = @sourceOrderId AND line_item_id = @lineItemId`,
      ),
      upsertFulfillmentLink: db.$client.prepare(
        `INSERT INTO fulfillment_links (shop, source_order_id, source_fulfillment_id, fulfillment_id, hash, updated_at)
         VALUES (@shop, @sourceOrderId, @sourceFulfillmentId, @fulfillmentId, @hash, @at)
         ON CONFLICT (shop, source_order_id, source_fulfillment_id) DO UPDATE SET
           fulfillment_id = excluded.fulfillment_id, hash = excluded.hash, updated_at = excluded.updated_at`,
      ),
      cancelOrder: db.$client.prepare(
        `UPDATE order_links SET canceled_at = @canceledAt
         WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
      // The reads of every planning step (twice per synced order). No ORDER BY: the lookup walks
      // the primary-key index, so rows come in its order, and an ORDER BY tripled their cost.
      selectOrder: db.$client.prepare(
        `SELECT store_id AS storeId, order_id AS orderId, order_hash AS orderHash,
           synced_version AS syncedVersion, canceled_at AS canceledAt
         FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
      selectLines: db.$client.prepare(
        `SELECT source_line_item_id AS sourceLineItemId, line_item_id AS lineItemId, hash,
           canceled_at AS canceledAt
         FROM line_item_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
      selectFulfillments: db.$client.prepare(
        `SELECT source_fulfillment_id AS sourceFulfillmentId, fulfillment_id AS fulfillmentId, hash
         FROM fulfillment_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
    };
    const raw = this.#raw;
    // Retiring: the order-level link to the record, every link and intent of the order removed.
    const childTables = ["line_item_links", "fulfillment_links", "intents", "order_links"];
    const retireOne = childTables.map((table) =>
      db.$client.prepare(
        `DELETE FROM ${table} WHERE shop = @shop AND source_order_id = @sourceOrderId`,
      ),
    );
    const archive = db.$client.prepare(
      `INSERT INTO retired_order_links (shop, source_order_id, provider_base_url, store_id, order_id, order_name, reason, retired_at)
       SELECT shop, source_order_id, provider_base_url, store_id, order_id, order_name, @reason, @at
       FROM order_links WHERE shop = @shop AND source_order_id = @sourceOrderId`,
    );
    this.#retire = db.$client.transaction(
      (row: { shop: string; sourceOrderId: string; reason: string; at: string }) => {
        const archived = archive.run(row).changes;
        for (const statement of retireOne) statement.run(row);
        return archived;
      },
    ).immediate;
    const outside = db.$client.prepare(
      `SELECT source_order_id AS sourceOrderId FROM order_links
       WHERE shop = @shop AND (store_id <> @storeId OR (@providerBaseUrl IS NOT NULL
         AND (provider_base_url IS NULL OR provider_base_url <> @providerBaseUrl)))`,
    );
    this.#retireOutside = db.$client.transaction(
      (row: LinkSpace & { shop: string; reason: string; at: string }) => {
        const orders = outside.all(row) as { sourceOrderId: string }[];
        let retired = 0;
        for (const { sourceOrderId } of orders) {
          retired += this.#retire({
            shop: row.shop,
            sourceOrderId,
            reason: row.reason,
            at: row.at,
          });
        }
        return retired;
      },
    ).immediate;
    // Each effect and the completion of its intent commit together (better-sqlite3 transactions:
    // BEGIN IMMEDIATE, so concurrent worker processes wait on busy_timeout instead of failing).
    // Statements take the input as named parameters; keys they do not name are ignored.
    const recorded = <T extends Keyed>(
      effect: (input: T, at: string) => void,
      resultId: (input: T) => number | null,
    ) =>
      db.$client.transaction((input: T, at: string, check: SyncedCheck | undefined): boolean => {
        effect(input, at);
        raw.completeIntent.run({ ...input, resultId: resultId(input), at });
        if (!check || !settled(check, () => this.#loadLinks(input.shop, input.sourceOrderId))) {
          return false;
        }
        const row = { shop: input.shop, sourceOrderId: input.sourceOrderId };
        raw.markSynced.run({ ...row, version: check.version, at });
        raw.clearFailure.run(row);
        return true;
      }).immediate;
    this.#tx = {
      orderCreated: recorded<OrderCreated>(
        (input, at) => {
          // The provider handed out an ID that another link into the same environment holds
          // (order IDs are the service's, across its stores): it lost that order and reused
          // its ID. That link now points at this order: retired first.
          for (const other of raw.sameProviderOrder.all(input) as Keyed[]) {
            this.#retire({
              shop: other.shop,
              sourceOrderId: other.sourceOrderId,
              reason: `the provider gave order ${input.orderId} to Shopify order ${input.sourceOrderId}`,
              at,
            });
          }
          raw.upsertOrderLink.run({ ...input, at });
          for (const line of input.lineItems) {
            raw.upsertLineItemLink.run({
              ...line,
              shop: input.shop,
              sourceOrderId: input.sourceOrderId,
              at,
            });
          }
          raw.clearFailure.run(input);
        },
        (input) => input.orderId,
      ),
      orderUpdated: recorded<OrderUpdated>(
        (input) => raw.setOrderHash.run(input),
        () => null,
      ),
      lineItemAdded: recorded<LineItemAdded>(
        (input, at) => raw.upsertLineItemLink.run({ ...input, at }),
        (input) => input.lineItemId,
      ),
      lineItemCanceled: recorded<LineItemCanceled>(
        (input) => raw.cancelLineItem.run(input),
        (input) => input.lineItemId,
      ),
      fulfillmentUpserted: recorded<FulfillmentUpserted>(
        (input, at) => raw.upsertFulfillmentLink.run({ ...input, at }),
        (input) => input.fulfillmentId,
      ),
      orderCanceled: recorded<OrderCanceled>(
        (input) => raw.cancelOrder.run(input),
        () => null,
      ),
      synced: db.$client.transaction(
        (row: { shop: string; sourceOrderId: string; version: string; at: string }) => {
          raw.markSynced.run(row);
          raw.clearFailure.run({ shop: row.shop, sourceOrderId: row.sourceOrderId });
        },
      ).immediate,
    };
  }

  async loadLinks(shop: string, sourceOrderId: string): Promise<OrderLinks | null> {
    return this.#loadLinks(shop, sourceOrderId);
  }

  /** Inside a transaction, which better-sqlite3 runs synchronously. */
  #loadLinks(shop: string, sourceOrderId: string): OrderLinks | null {
    const key = { shop, sourceOrderId };
    const order = this.#raw.selectOrder.get(key) as OrderRow | undefined;
    if (!order) return null;
    return {
      storeId: order.storeId as ProviderStoreId,
      sourceOrderId,
      orderId: order.orderId as ProviderOrderId,
      orderHash: order.orderHash,
      syncedVersion: order.syncedVersion,
      canceledAt: order.canceledAt,
      lineItems: this.#raw.selectLines.all(key) as OrderLinks["lineItems"],
      fulfillments: this.#raw.selectFulfillments.all(key) as OrderLinks["fulfillments"],
    };
  }

  /** The provider store and environment an order's link points into, or null when unlinked. */
  async spaceOf(shop: string, sourceOrderId: string): Promise<LinkSpace | null> {
    return (this.#raw.selectSpace.get({ shop, sourceOrderId }) as LinkSpace | undefined) ?? null;
  }

  /**
   * Retires an order's links: the order-level link is kept in retired_order_links for the record,
   * and every link and intent of the order is removed, so the next sync creates the order afresh
   * where the shop now sends its orders. Returns whether there was a link.
   */
  async retireOrder(shop: string, sourceOrderId: string, reason: string): Promise<boolean> {
    return this.#retire({ shop, sourceOrderId, reason, at: now() }) > 0;
  }

  /**
   * Retires every link of a shop that points outside `space` (a store or environment switch):
   * the shop's orders are sent again to the new store, and nothing is written to the old one.
   * Links made before spaces were recorded count as the old space here; a space without a base
   * URL matches any environment (a store switch alone). Returns how many.
   */
  async retireOutside(shop: string, space: LinkSpace, reason: string): Promise<number> {
    return this.#retireOutside({ shop, ...space, reason, at: now() });
  }

  /** The links the shop retired, newest first. */
  async retired(
    shop: string,
  ): Promise<{ sourceOrderId: string; storeId: number; orderId: number; reason: string }[]> {
    return this.db
      .select({
        sourceOrderId: retiredOrderLinks.sourceOrderId,
        storeId: retiredOrderLinks.storeId,
        orderId: retiredOrderLinks.orderId,
        reason: retiredOrderLinks.reason,
      })
      .from(retiredOrderLinks)
      .where(eq(retiredOrderLinks.shop, shop))
      .orderBy(desc(retiredOrderLinks.id))
      .all();
  }

  /** The link of an order by its name ("#1001" or "1001"). */
  async findByOrderName(
    shop: string,
    name: string,
  ): Promise<{ sourceOrderId: string; orderId: number } | null> {
    const wanted = name.startsWith("#") ? name : `#${name}`;
    const row = this.db
      .select({ sourceOrderId: orderLinks.sourceOrderId, orderId: orderLinks.orderId })
      .from(orderLinks)
      .where(and(eq(orderLinks.shop, shop), eq(orderLinks.orderName, wanted)))
      .get();
    return row ?? null;
  }

  async getOrderLinkRow(shop: string, sourceOrderId: string) {
    return (
      this.db
        .select()
        .from(orderLinks)
        .where(and(eq(orderLinks.shop, shop), eq(orderLinks.sourceOrderId, sourceOrderId)))
        .get() ?? null
    );
  }

  /**
   * Marks the start of a provider write. A pending intent from an earlier attempt is kept and
   * its attempt count raised: the caller then knows the write may already have happened. A done
   * intent with the same key is an earlier, finished incarnation: it starts afresh.
   */
  async beginIntent(
    shop: string,
    sourceOrderId: string,
    key: string,
    kind: string,
  ): Promise<IntentRow> {
    return this.#raw.beginIntent.get({ shop, sourceOrderId, key, kind, at: now() }) as IntentRow;
  }

  /**
   * Takes back the attempt `beginIntent` counted, for a request the provider refused before
   * processing it (a 429): the next attempt then knows nothing may exist from this one, and
   * sends its create without first looking for what a lost answer could have created.
   */
  async releaseIntent(shop: string, sourceOrderId: string, key: string): Promise<void> {
    this.#raw.releaseIntent.run({ shop, sourceOrderId, key });
  }

  async recordOrderCreated(input: OrderCreated, synced?: SyncedCheck): Promise<boolean> {
    return this.#tx.orderCreated(input, now(), synced);
  }

  async recordOrderUpdated(input: OrderUpdated, synced?: SyncedCheck): Promise<boolean> {
    return this.#tx.orderUpdated(input, now(), synced);
  }

  async recordLineItemAdded(input: LineItemAdded, synced?: SyncedCheck): Promise<boolean> {
    return this.#tx.lineItemAdded(input, now(), synced);
  }

  async recordLineItemCanceled(input: LineItemCanceled, synced?: SyncedCheck): Promise<boolean> {
    return this.#tx.lineItemCanceled(input, now(), synced);
  }

  async recordFulfillmentUpserted(
    input: FulfillmentUpserted,
    synced?: SyncedCheck,
  ): Promise<boolean> {
    return this.#tx.fulfillmentUpserted(input, now(), synced);
  }

  async recordOrderCanceled(input: OrderCanceled, synced?: SyncedCheck): Promise<boolean> {
    return this.#tx.orderCanceled(input, now(), synced);
  }

  /** How the order's last sync failed, when its failure is not cleared by a success yet. */
  async lastFailure(
    shop: string,
    sourceOrderId: string,
  ): Promise<"failed" | "dead-lettered" | null> {
    const row = this.#raw.lastFailure.get({ shop, sourceOrderId }) as
      | { result: "failed" | "dead-lettered" }
      | undefined;
    return row?.result ?? null;
  }

  async markSynced(shop: string, sourceOrderId: string, version: string): Promise<void> {
    this.#tx.synced({ shop, sourceOrderId, version, at: now() });
  }

  /** Records a failure, whether or not the provider has the order yet. No customer data. */
  async markFailed(
    shop: string,
    sourceOrderId: string,
    result: "failed" | "dead-lettered",
    failure: FailureRecord,
    orderName: string | null = null,
  ): Promise<void> {
    const message = failure.message.slice(0, 2_000);
    const category = failure.category;
    const fields = JSON.stringify(failure.fields);
    const at = now();
    // Both rows or neither: the failure record and the link's last result agree.
    this.db.transaction((tx) => {
      tx.insert(orderFailures)
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
        })
        .run();
      tx.update(orderLinks)
        .set({ lastResult: result, lastError: message })
        .where(and(eq(orderLinks.shop, shop), eq(orderLinks.sourceOrderId, sourceOrderId)))
        .run();
    });
  }

  /** Counts for status pages: orders synced, and orders whose last attempt failed. */
  async countByResult(
    shop: string,
  ): Promise<{ synced: number; failed: number; deadLettered: number }> {
    const synced =
      this.db
        .select({ n: count() })
        .from(orderLinks)
        .where(and(eq(orderLinks.shop, shop), eq(orderLinks.lastResult, "synced")))
        .get()?.n ?? 0;
    const failures = this.db
      .select({ result: orderFailures.result, n: count() })
      .from(orderFailures)
      .where(eq(orderFailures.shop, shop))
      .groupBy(orderFailures.result)
      .all();
    return {
      synced,
      failed: failures.find((f) => f.result === "failed")?.n ?? 0,
      deadLettered: failures.find((f) => f.result === "dead-lettered")?.n ?? 0,
    };
  }

  /** The shop's latest failures, newest first, with the order's name when known. */
  async latestFailures(shop: string, limit: number) {
    return this.db
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
      .limit(limit)
      .all()
      .map((r) => ({
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
                fields: JSON.parse(r.fields ?? "[]") as FailureField[],
              } satisfies FailureRecord),
        error: r.error,
      }));
  }

  /** How many of the shop's orders last failed in this category. */
  async countFailures(shop: string, category: FailureCategory): Promise<number> {
    return (
      this.db
        .select({ n: count() })
        .from(orderFailures)
        .where(and(eq(orderFailures.shop, shop), eq(orderFailures.category, category)))
        .get()?.n ?? 0
    );
  }

  /** When each shop's latest order was synced. */
  async lastSyncedAtByShop(): Promise<Map<string, string | null>> {
    return new Map(
      this.db
        .select({ shop: orderLinks.shop, at: max(orderLinks.lastSyncedAt) })
        .from(orderLinks)
        .groupBy(orderLinks.shop)
        .all()
        .map((r) => [r.shop, r.at]),
    );
  }
}
