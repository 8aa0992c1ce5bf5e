import type pg from "pg";
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

/** A statement's input: any record whose keys name its parameters (others are ignored). */
type Params = object;
type Queryable = pg.Pool | pg.PoolClient;

/**
 * One of the shared statements with its named parameters numbered for Postgres, sent as a named
 * prepared statement: each pooled connection parses and plans it once (without the name, every
 * call was parsed and planned again: half of the server's CPU per sync in bench:worker).
 */
class Statement {
  readonly text: string;
  readonly names: string[] = [];

  constructor(
    readonly name: string,
    named: string,
  ) {
    this.text = named.replace(/@(\w+)/g, (_, name: string) => {
      let index = this.names.indexOf(name);
      if (index < 0) index = this.names.push(name) - 1;
      return `$${index + 1}`;
    });
  }

  async rows<T>(on: Queryable, params: Params): Promise<T[]> {
    return (await on.query(this.#config(params))).rows as T[];
  }

  async row<T>(on: Queryable, params: Params): Promise<T | undefined> {
    return (await this.rows<T>(on, params))[0];
  }

  async run(on: Queryable, params: Params): Promise<number> {
    return (await on.query(this.#config(params))).rowCount ?? 0;
  }

  #config(params: Params): pg.QueryConfig {
    const record = params as Record<string, unknown>;
    return {
      name: this.name,
      text: this.text,
      values: this.names.map((name) => record[name] ?? null),
    };
  }
}

const S = Object.fromEntries(
  Object.entries(LINK_SQL)
    .filter((entry): entry is [string, string] => typeof entry[1] === "string")
    .map(([name, text]) => [name, new Statement(`links_${name}`, text)]),
) as Record<Exclude<keyof typeof LINK_SQL, "retireOne">, Statement>;
const RETIRE_ONE = LINK_SQL.retireOne.map((text, i) => new Statement(`links_retire_${i}`, text));

/**
 * An order's links in one round trip (the planner reads them twice per sync, and the synced
 * check once more): the order row with its line-item and fulfillment links as JSON arrays.
 */
const SELECT_LINKS = new Statement(
  "links_select_all",
  `SELECT o.store_id AS "storeId", o.order_id AS "orderId", o.order_hash AS "orderHash",
     o.synced_version AS "syncedVersion", o.canceled_at AS "canceledAt",
     coalesce((SELECT json_agg(json_build_object('sourceLineItemId', l.source_line_item_id,
         'lineItemId', l.line_item_id, 'hash', l.hash, 'canceledAt', l.canceled_at))
       FROM line_item_links l
       WHERE l.shop = o.shop AND l.source_order_id = o.source_order_id), '[]') AS "lineItems",
     coalesce((SELECT json_agg(json_build_object('sourceFulfillmentId', f.source_fulfillment_id,
         'fulfillmentId', f.fulfillment_id, 'hash', f.hash))
       FROM fulfillment_links f
       WHERE f.shop = o.shop AND f.source_order_id = o.source_order_id), '[]') AS "fulfillments"
   FROM order_links o WHERE o.shop = @shop AND o.source_order_id = @sourceOrderId`,
);

/**
 * The link store on Postgres. Where SQLite relied on its single writer (every write transaction
 * BEGIN IMMEDIATE), each write here runs in a transaction that first takes a lock on the order
 * (`pg_advisory_xact_lock` on the shop and order): two workers that find themselves on the same
 * order (a job taken over from a worker that is slow rather than dead) write its links one after
 * the other, and the check that marks it synced reads what the other committed. The intent
 * protocol is unchanged: `beginIntent` commits before the provider call, and each effect commits
 * with the completion of its intent.
 */
export class PgLinkRepository extends LinkQueries {
  readonly #pool: pg.Pool;

  constructor(db: Extract<Db, { dialect: "postgres" }>) {
    super(db);
    this.#pool = db.pg.$client;
  }

  async loadLinks(shop: string, sourceOrderId: string): Promise<OrderLinks | null> {
    return this.#loadLinks(this.#pool, shop, sourceOrderId);
  }

  async #loadLinks(on: Queryable, shop: string, sourceOrderId: string) {
    const order = await SELECT_LINKS.row<OrderRow & Pick<OrderLinks, "lineItems" | "fulfillments">>(
      on,
      { shop, sourceOrderId },
    );
    if (!order) return null;
    const { lineItems, fulfillments } = order;
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

  async spaceOf(shop: string, sourceOrderId: string): Promise<LinkSpace | null> {
    return (await S.selectSpace.row<LinkSpace>(this.#pool, { shop, sourceOrderId })) ?? null;
  }

  async retireOrder(shop: string, sourceOrderId: string, reason: string): Promise<boolean> {
    const row = { shop, sourceOrderId, reason, at: now() };
    return (await this.#transaction(row, (c) => this.#retire(c, row))) > 0;
  }

  async retireOutside(shop: string, space: LinkSpace, reason: string): Promise<number> {
    const at = now();
    const orders = await S.outside.rows<{ sourceOrderId: string }>(this.#pool, {
      shop,
      ...space,
    });
    let retired = 0;
    for (const { sourceOrderId } of orders) {
      const row = { shop, sourceOrderId, reason, at };
      retired += await this.#transaction(row, (c) => this.#retire(c, row));
    }
    return retired;
  }

  async #retire(
    on: Queryable,
    row: { shop: string; sourceOrderId: string; reason: string; at: string },
  ): Promise<number> {
    const archived = await S.archive.run(on, row);
    for (const statement of RETIRE_ONE) await statement.run(on, row);
    return archived;
  }

  async beginIntent(
    shop: string,
    sourceOrderId: string,
    key: string,
    kind: string,
  ): Promise<IntentRow> {
    // One statement: the row lock of its upsert orders two attempts of the same intent.
    return (await S.beginIntent.row<IntentRow>(this.#pool, {
      shop,
      sourceOrderId,
      key,
      kind,
      at: now(),
    })) as IntentRow;
  }

  async releaseIntent(shop: string, sourceOrderId: string, key: string): Promise<void> {
    await S.releaseIntent.run(this.#pool, { shop, sourceOrderId, key });
  }

  recordOrderCreated(input: OrderCreated, synced?: SyncedCheck): Promise<boolean> {
    return this.#recorded(input, input.orderId, synced, async (c, at) => {
      // The provider handed out an ID that another link into the same environment holds: it
      // lost that order and reused its ID. That link now points at this order: retired first.
      for (const other of await S.sameProviderOrder.rows<Keyed>(c, input)) {
        await this.#retire(c, {
          shop: other.shop,
          sourceOrderId: other.sourceOrderId,
          reason: `the provider gave order ${input.orderId} to Shopify order ${input.sourceOrderId}`,
          at,
        });
      }
      await S.upsertOrderLink.run(c, { ...input, at });
      for (const line of input.lineItems) {
        await S.upsertLineItemLink.run(c, {
          ...line,
          shop: input.shop,
          sourceOrderId: input.sourceOrderId,
          at,
        });
      }
      await S.clearFailure.run(c, input);
    });
  }

  recordOrderUpdated(input: OrderUpdated, synced?: SyncedCheck): Promise<boolean> {
    return this.#recorded(input, null, synced, (c) => S.setOrderHash.run(c, input));
  }

  recordLineItemAdded(input: LineItemAdded, synced?: SyncedCheck): Promise<boolean> {
    return this.#recorded(input, input.lineItemId, synced, (c, at) =>
      S.upsertLineItemLink.run(c, { ...input, at }),
    );
  }

  recordLineItemCanceled(input: LineItemCanceled, synced?: SyncedCheck): Promise<boolean> {
    return this.#recorded(input, input.lineItemId, synced, (c) => S.cancelLineItem.run(c, input));
  }

  recordFulfillmentUpserted(input: FulfillmentUpserted, synced?: SyncedCheck): Promise<boolean> {
    return this.#recorded(input, input.fulfillmentId, synced, (c, at) =>
      S.upsertFulfillmentLink.run(c, { ...input, at }),
    );
  }

  recordOrderCanceled(input: OrderCanceled, synced?: SyncedCheck): Promise<boolean> {
    return this.#recorded(input, null, synced, (c) => S.cancelOrder.run(c, input));
  }

  async lastFailure(
    shop: string,
    sourceOrderId: string,
  ): Promise<"failed" | "dead-lettered" | null> {
    const row = await S.lastFailure.row<{ result: "failed" | "dead-lettered" }>(this.#pool, {
      shop,
      sourceOrderId,
    });
    return row?.result ?? null;
  }

  async markSynced(shop: string, sourceOrderId: string, version: string): Promise<void> {
    const row = { shop, sourceOrderId, version, at: now() };
    await this.#transaction(row, async (c) => {
      await S.markSynced.run(c, row);
      await S.clearFailure.run(c, row);
    });
  }

  /** The effect, the completion of its intent and, when the check says so, the synced mark. */
  #recorded(
    input: Keyed,
    resultId: number | null,
    check: SyncedCheck | undefined,
    effect: (c: pg.PoolClient, at: string) => Promise<unknown>,
  ): Promise<boolean> {
    return this.#transaction(input, async (c) => {
      const at = now();
      await effect(c, at);
      await S.completeIntent.run(c, { ...input, resultId, at });
      if (!check) return false;
      const links = await this.#loadLinks(c, input.shop, input.sourceOrderId);
      if (!settled(check, () => links)) return false;
      const row = { shop: input.shop, sourceOrderId: input.sourceOrderId };
      await S.markSynced.run(c, { ...row, version: check.version, at });
      await S.clearFailure.run(c, row);
      return true;
    });
  }

  /** A transaction holding the order's lock; rolled back on any error. */
  async #transaction<T>(
    order: { shop: string; sourceOrderId: string },
    work: (c: pg.PoolClient) => Promise<T>,
  ): Promise<T> {
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await client.query("BEGIN");
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
        `${order.shop}/${order.sourceOrderId}`,
      ]);
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch((rollback: Error) => {
        // The connection itself failed: it must not go back to the pool.
        broken = rollback;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }
}
