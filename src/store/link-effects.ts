import type { OrderLinks } from "../sync/links.ts";
import {
  type FulfillmentUpserted,
  type Keyed,
  type LINK_SQL,
  type LineItemAdded,
  type LineItemCanceled,
  type LinkSpace,
  now,
  type OrderCanceled,
  type OrderCreated,
  type OrderState,
  type OrderUpdated,
  type SyncedCheck,
  settled,
} from "./link-queries.ts";

/**
 * The link store's writes, each written once as a program of steps that an engine's executor
 * runs: better-sqlite3 synchronously inside one `BEGIN IMMEDIATE` transaction (the worker's hot
 * path pays no promise per statement), Postgres on a pooled connection inside a transaction that
 * holds the order's lock, waiting only for the answers the program reads (the others are sent
 * behind the statements in flight). A program is a generator: it yields a step (a
 * statement of `LINK_SQL` with its named parameters, or "load the order's links"), and the
 * executor sends back what the step returned.
 */
export type LinkStatement = keyof typeof LINK_SQL;

export type LinkStep =
  /**
   * Runs the statement; answers the number of rows it changed. `unanswered`: the program does
   * not use the answer, so an executor may send the statement without waiting for it.
   */
  | { kind: "run"; statement: LinkStatement; params: object; unanswered?: true }
  /** Answers the statement's first row, or undefined. */
  | { kind: "row"; statement: LinkStatement; params: object }
  /** Answers every row of the statement. */
  | { kind: "rows"; statement: LinkStatement; params: object }
  /** Answers the order's links (`OrderLinks`), or null: each engine reads them its fastest way. */
  | { kind: "links"; shop: string; sourceOrderId: string }
  /**
   * Upserts the order link (`upsertOrderLink` with `order`) and each of `lines`
   * (`upsertLineItemLink`, the order's keys and `at` added): one statement on Postgres.
   */
  | { kind: "orderLink"; order: object & OrderKey & { at: string }; lines: object[] }
  /** Answers the order's `OrderState` (links, space, failure): one statement on Postgres. */
  | { kind: "state"; shop: string; sourceOrderId: string }
  /**
   * Completes an intent (`completeIntent`) and, when `synced`, marks the order synced
   * (`markSynced`) with `params.version`: one statement on Postgres (a data-modifying CTE),
   * two on SQLite.
   */
  | { kind: "finish"; params: object; synced: boolean };

export type LinkProgram<T> = Generator<LinkStep, T, unknown>;

/** An order, as the lock a write holds and as the rows a retirement removes. */
export type OrderKey = { shop: string; sourceOrderId: string };

/** Runs link programs on one engine. */
export interface LinkExecutor {
  /** Outside a transaction: reads. */
  read<T>(program: LinkProgram<T>): Promise<T>;
  /**
   * A single-statement write, committed before the promise resolves: on its own on Postgres;
   * on SQLite with the other writes of the same event-loop turn (group commit).
   */
  commit<T>(program: LinkProgram<T>): Promise<T>;
  /**
   * In one transaction holding the order's lock: every step commits, or none (on SQLite a
   * savepoint in the turn's group commit; a failing program rolls back only its own steps).
   */
  write<T>(order: OrderKey, program: LinkProgram<T>): Promise<T>;
  /**
   * Writes each order `select` finds and adds up the answers: SQLite in one transaction (its
   * single writer), Postgres in one transaction per order, each holding that order's lock.
   */
  writeEach(
    select: LinkProgram<OrderKey[]>,
    program: (order: OrderKey) => LinkProgram<number>,
  ): Promise<number>;
}

export function* run(statement: LinkStatement, params: object): LinkProgram<number> {
  return (yield { kind: "run", statement, params }) as number;
}

/** Runs the statement, its answer unused (see `unanswered`). */
export function* exec(statement: LinkStatement, params: object): LinkProgram<void> {
  yield { kind: "run", statement, params, unanswered: true };
}

export function* row<T>(statement: LinkStatement, params: object): LinkProgram<T | undefined> {
  return (yield { kind: "row", statement, params }) as T | undefined;
}

export function* rows<T>(statement: LinkStatement, params: object): LinkProgram<T[]> {
  return (yield { kind: "rows", statement, params }) as T[];
}

export function* loadLinks(shop: string, sourceOrderId: string): LinkProgram<OrderLinks | null> {
  return (yield { kind: "links", shop, sourceOrderId }) as OrderLinks | null;
}

export function* orderState(shop: string, sourceOrderId: string): LinkProgram<OrderState> {
  return (yield { kind: "state", shop, sourceOrderId }) as OrderState;
}

/** The statements that remove every link and intent of a retired order, in this order. */
const RETIRE = ["retireLines", "retireFulfillments", "retireIntents", "retireOrder"] as const;

type Retirement = OrderKey & { reason: string; at: string };

/**
 * Retires an order's links: the order-level link is kept in retired_order_links for the record,
 * and every link and intent of the order is removed. Answers how many links were archived.
 */
export function* retire(order: Retirement): LinkProgram<number> {
  const archived = yield* run("archive", order);
  for (const statement of RETIRE) yield* exec(statement, order);
  return archived;
}

/** The orders of the shop whose links point outside `space`. */
export function* outside(shop: string, space: LinkSpace): LinkProgram<OrderKey[]> {
  const found = yield* rows<{ sourceOrderId: string }>("outside", { shop, ...space });
  return found.map(({ sourceOrderId }) => ({ shop, sourceOrderId }));
}

/**
 * Marks the order synced at a Shopify version, and clears its recorded failure unless the
 * caller knows there is none (`clearFailure` false: read with the order's state).
 */
export function* synced(
  order: OrderKey,
  version: string,
  at: string,
  clearFailure = true,
): LinkProgram<void> {
  const key = { shop: order.shop, sourceOrderId: order.sourceOrderId };
  yield* exec("markSynced", { ...key, version, at });
  if (clearFailure) yield* exec("clearFailure", key);
}

/**
 * An effect, the completion of its intent and, when the check says so, the synced mark: the
 * transaction every `record…` call is.
 */
function* recorded(
  input: Keyed,
  resultId: number | null,
  check: SyncedCheck | undefined,
  effect: (at: string) => LinkProgram<unknown>,
  /** The effect cleared the order's failure record itself. */
  cleared = false,
): LinkProgram<boolean> {
  const at = now();
  yield* effect(at);
  const intent = { ...input, resultId, at };
  if (!check) {
    yield* exec("completeIntent", intent);
    return false;
  }
  const links = yield* loadLinks(input.shop, input.sourceOrderId);
  const done = settled(check, () => links);
  yield { kind: "finish", params: { ...intent, version: check.version }, synced: done };
  if (done && !cleared && check.clearFailure !== false) yield* exec("clearFailure", input);
  return done;
}

/** Each provider write's effect on the links, recorded with its intent. */
export const RECORD = {
  orderCreated: (input: OrderCreated, check?: SyncedCheck) =>
    recorded(
      input,
      input.orderId,
      check,
      function* (at) {
        // The provider handed out an ID that another link into the same environment holds (order
        // IDs are the service's, across its stores): it lost that order and reused its ID. That
        // link now points at this order: retired first. Its order's job may have written through
        // it since the provider handed the ID out (one update, answered as ours and stopped
        // there): this order's fields are then sent again, by an empty hash, before it counts as
        // synced.
        const others = yield* rows<Keyed>("sameProviderOrder", input);
        for (const other of others) {
          yield* retire({
            shop: other.shop,
            sourceOrderId: other.sourceOrderId,
            reason: `the provider gave order ${input.orderId} to Shopify order ${input.sourceOrderId}`,
            at,
          });
        }
        const orderHash = others.length > 0 ? "" : input.orderHash;
        yield { kind: "orderLink", order: { ...input, orderHash, at }, lines: input.lineItems };
        // Creating the order clears its failure record (unless it is known to have none).
        if (input.clearFailure !== false) yield* exec("clearFailure", input);
      },
      true,
    ),
  orderUpdated: (input: OrderUpdated, check?: SyncedCheck) =>
    recorded(input, null, check, () => run("setOrderHash", input)),
  lineItemAdded: (input: LineItemAdded, check?: SyncedCheck) =>
    recorded(input, input.lineItemId, check, (at) => run("upsertLineItemLink", { ...input, at })),
  lineItemCanceled: (input: LineItemCanceled, check?: SyncedCheck) =>
    recorded(input, input.lineItemId, check, () => run("cancelLineItem", input)),
  fulfillmentUpserted: (input: FulfillmentUpserted, check?: SyncedCheck) =>
    recorded(input, input.fulfillmentId, check, (at) =>
      run("upsertFulfillmentLink", { ...input, at }),
    ),
  orderCanceled: (input: OrderCanceled, check?: SyncedCheck) =>
    recorded(input, null, check, () => run("cancelOrder", input)),
};
