import { randomUUID } from "node:crypto";
import type { OrderLinks } from "../sync/links.ts";
import type { Db } from "./database.ts";
import {
  exec,
  type LinkExecutor,
  loadLinks,
  type OrderKey,
  orderState,
  outside,
  RECORD,
  retire,
  row,
  rows,
  run,
  synced,
} from "./link-effects.ts";
import {
  type FulfillmentUpserted,
  failureOf,
  type IntentRow,
  type LineItemAdded,
  type LineItemCanceled,
  LinkQueries,
  type LinkSpace,
  now,
  type OrderCanceled,
  type OrderCreated,
  type OrderState,
  type OrderUpdated,
  type SyncedCheck,
} from "./link-queries.ts";
import { pgLinkExecutor } from "./link-repository-pg.ts";
import { sqliteLinkExecutor } from "./link-repository-sqlite.ts";

export type { IntentRow, LinkSpace, OrderState, SyncedCheck } from "./link-queries.ts";

/**
 * The link store, one implementation for both engines: each write is a program of
 * link-effects.ts, run by the engine's executor (SQLite: prepared statements in synchronous
 * transactions; Postgres: named statements in transactions that lock the order).
 */
class Links extends LinkQueries {
  readonly #exec: LinkExecutor;

  constructor(db: Db, exec: LinkExecutor) {
    super(db);
    this.#exec = exec;
  }

  async loadLinks(shop: string, sourceOrderId: string): Promise<OrderLinks | null> {
    return this.#exec.read(loadLinks(shop, sourceOrderId));
  }

  /**
   * What a sync job reads of an order before planning: its links, where they point and how its
   * last sync failed, in one statement (the order row with its space and failure joined; on
   * SQLite the line-item and fulfillment links follow when the order is linked).
   */
  async orderState(shop: string, sourceOrderId: string): Promise<OrderState> {
    return this.#exec.read(orderState(shop, sourceOrderId));
  }

  /** The provider store and environment an order's link points into, or null when unlinked. */
  async spaceOf(shop: string, sourceOrderId: string): Promise<LinkSpace | null> {
    return (await this.#exec.read(row<LinkSpace>("selectSpace", { shop, sourceOrderId }))) ?? null;
  }

  /**
   * Retires an order's links: the order-level link is kept in retired_order_links for the record,
   * and every link and intent of the order is removed, so the next sync creates the order afresh
   * where the shop now sends its orders. Returns whether there was a link.
   */
  async retireOrder(shop: string, sourceOrderId: string, reason: string): Promise<boolean> {
    const order = { shop, sourceOrderId };
    return (await this.#exec.write(order, retire({ ...order, reason, at: now() }))) > 0;
  }

  /**
   * Retires every link of a shop that points outside `space` (a store or environment switch):
   * the shop's orders are sent again to the new store, and nothing is written to the old one.
   * Links made before spaces were recorded count as the old space here; a space without a base
   * URL matches any environment (a store switch alone). Returns how many.
   */
  async retireOutside(shop: string, space: LinkSpace, reason: string): Promise<number> {
    const at = now();
    return this.#exec.writeEach(outside(shop, space), (order) => retire({ ...order, reason, at }));
  }

  /**
   * The orders whose links, other than `except`'s, point at provider order `orderId` in the
   * environment `providerBaseUrl` (links made before spaces were recorded count as any).
   */
  async holdersOf(orderId: number, providerBaseUrl: string, except: OrderKey): Promise<OrderKey[]> {
    return this.#exec.read(
      rows<OrderKey>("sameProviderOrder", { ...except, orderId, providerBaseUrl }),
    );
  }

  /**
   * Forgets what the order's provider order holds when its link still points at `orderId`:
   * another order's write reached that provider order, so the next sync sends the order's
   * fields again. Returns whether the link pointed there. The hash becomes one no update was
   * planned from, so that an update of the order already under way when the other write landed
   * does not record its hash over it (`setOrderHash` replaces only the hash it was planned from):
   * its job then sends the order's fields once more.
   */
  async forgetOrderHash(shop: string, sourceOrderId: string, orderId: number): Promise<boolean> {
    const order = { shop, sourceOrderId };
    const forgotten = `forgotten:${randomUUID()}`;
    return (
      (await this.#exec.write(order, run("forgetOrderHash", { ...order, orderId, forgotten }))) > 0
    );
  }

  /**
   * Marks the start of a provider write. A pending intent from an earlier attempt is kept and
   * its attempt count raised: the caller then knows the write may already have happened. A done
   * intent with the same key is an earlier, finished incarnation: it starts afresh. One
   * statement: the row lock of its upsert orders two attempts of the same intent.
   */
  async beginIntent(
    shop: string,
    sourceOrderId: string,
    key: string,
    kind: string,
  ): Promise<IntentRow> {
    const params = { shop, sourceOrderId, key, kind, at: now() };
    return (await this.#exec.commit(row<IntentRow>("beginIntent", params))) as IntentRow;
  }

  /**
   * Takes back the attempt `beginIntent` counted, for a request the provider refused before
   * processing it (a 429): the next attempt then knows nothing may exist from this one, and
   * sends its create without first looking for what a lost answer could have created.
   */
  async releaseIntent(shop: string, sourceOrderId: string, key: string): Promise<void> {
    await this.#exec.commit(run("releaseIntent", { shop, sourceOrderId, key }));
  }

  recordOrderCreated(input: OrderCreated, check?: SyncedCheck): Promise<boolean> {
    return this.#exec.write(input, RECORD.orderCreated(input, check));
  }

  recordOrderUpdated(input: OrderUpdated, check?: SyncedCheck): Promise<boolean> {
    return this.#exec.write(input, RECORD.orderUpdated(input, check));
  }

  recordLineItemAdded(input: LineItemAdded, check?: SyncedCheck): Promise<boolean> {
    return this.#exec.write(input, RECORD.lineItemAdded(input, check));
  }

  recordLineItemCanceled(input: LineItemCanceled, check?: SyncedCheck): Promise<boolean> {
    return this.#exec.write(input, RECORD.lineItemCanceled(input, check));
  }

  recordFulfillmentUpserted(input: FulfillmentUpserted, check?: SyncedCheck): Promise<boolean> {
    return this.#exec.write(input, RECORD.fulfillmentUpserted(input, check));
  }

  recordOrderCanceled(input: OrderCanceled, check?: SyncedCheck): Promise<boolean> {
    return this.#exec.write(input, RECORD.orderCanceled(input, check));
  }

  /** How the order's last sync failed, when its failure is not cleared by a success yet. */
  async lastFailure(
    shop: string,
    sourceOrderId: string,
  ): Promise<"failed" | "dead-lettered" | null> {
    const failure = await this.#exec.read(
      row<{ result: "failed" | "dead-lettered" | "discarded" }>("lastFailure", {
        shop,
        sourceOrderId,
      }),
    );
    return failureOf(failure?.result);
  }

  /** Forgets the order's recorded failure (an order kept out of the provider on purpose). */
  async clearFailure(shop: string, sourceOrderId: string): Promise<void> {
    const order = { shop, sourceOrderId };
    await this.#exec.write(order, exec("clearFailure", order));
  }

  /** Marks the order synced; `clearFailure` false when it is known to have no failure record. */
  async markSynced(
    shop: string,
    sourceOrderId: string,
    version: string,
    clearFailure = true,
  ): Promise<void> {
    const order = { shop, sourceOrderId };
    await this.#exec.write(order, synced(order, version, now(), clearFailure));
  }
}

/** The link store's interface, whichever engine holds it. */
export type LinkRepository = {
  [K in keyof Links]: Links[K];
};

/** The link repository of the store's engine. */
export function createLinkRepository(db: Db): LinkRepository {
  return new Links(db, db.dialect === "sqlite" ? sqliteLinkExecutor(db) : pgLinkExecutor(db));
}
