import type BetterSqlite3 from "better-sqlite3";
import type { ProviderOrderId, ProviderStoreId } from "../provider/schemas.ts";
import type { OrderLinks } from "../sync/links.ts";
import type { Db } from "./database.ts";
import {
  type FulfillmentUpserted,
  type IntentRow,
  type Keyed,
  LINK_SQL,
  type LineItemAdded,
  type LineItemCanceled,
  LinkQueries,
  type LinkSpace,
  now,
  type OrderCanceled,
  type OrderCreated,
  type OrderRow,
  type OrderUpdated,
  type SyncedCheck,
  settled,
} from "./link-queries.ts";

/** The link store on SQLite: prepared statements, each write in one synchronous transaction. */
export class SqliteLinkRepository extends LinkQueries {
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

  constructor(db: Extract<Db, { dialect: "sqlite" }>) {
    super(db);
    const { sqlite } = db;
    // The hot path as plain prepared statements (the SQL both engines share).
    const client = sqlite.$client;
    this.#raw = Object.fromEntries(
      Object.entries(LINK_SQL)
        .filter((entry): entry is [string, string] => typeof entry[1] === "string")
        .map(([name, text]) => [name, client.prepare(text)]),
    ) as Record<Exclude<keyof typeof LINK_SQL, "retireOne">, BetterSqlite3.Statement>;
    const raw = this.#raw;
    const retireOne = LINK_SQL.retireOne.map((text) => client.prepare(text));
    const archive = raw.archive;
    this.#retire = client.transaction(
      (row: { shop: string; sourceOrderId: string; reason: string; at: string }) => {
        const archived = archive.run(row).changes;
        for (const statement of retireOne) statement.run(row);
        return archived;
      },
    ).immediate;
    const outside = raw.outside;
    this.#retireOutside = client.transaction(
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
      client.transaction((input: T, at: string, check: SyncedCheck | undefined): boolean => {
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
      synced: client.transaction(
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
}
