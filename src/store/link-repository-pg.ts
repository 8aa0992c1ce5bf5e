import type pg from "pg";
import type { OrderLinks } from "../sync/links.ts";
import type { Db, TurnQueries } from "./database.ts";
import type {
  LinkExecutor,
  LinkProgram,
  LinkStatement,
  LinkStep,
  OrderKey,
} from "./link-effects.ts";
import {
  LINK_SQL,
  type OrderRow,
  orderLinksOf,
  orderStateOf,
  type StateRow,
} from "./link-queries.ts";

/** A statement's input: any record whose keys name its parameters (others are ignored). */
type Params = object;

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

  async rows<T>(on: TurnQueries, params: Params): Promise<T[]> {
    return (await on.query(this.#config(params))).rows as T[];
  }

  async row<T>(on: TurnQueries, params: Params): Promise<T | undefined> {
    return (await this.rows<T>(on, params))[0];
  }

  async run(on: TurnQueries, params: Params): Promise<number> {
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
  Object.entries(LINK_SQL).map(([name, text]) => [name, new Statement(`links_${name}`, text)]),
) as Record<LinkStatement, Statement>;

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
 * What a sync job reads of an order before planning, in one round trip: its links (as
 * SELECT_LINKS), where they point and its failure record, whether or not either exists.
 */
const SELECT_STATE = new Statement(
  "links_select_state",
  `SELECT o.store_id AS "storeId", o.order_id AS "orderId", o.order_hash AS "orderHash",
     o.synced_version AS "syncedVersion", o.canceled_at AS "canceledAt",
     o.provider_base_url AS "providerBaseUrl", f.result AS "failure",
     coalesce((SELECT json_agg(json_build_object('sourceLineItemId', l.source_line_item_id,
         'lineItemId', l.line_item_id, 'hash', l.hash, 'canceledAt', l.canceled_at))
       FROM line_item_links l
       WHERE l.shop = o.shop AND l.source_order_id = o.source_order_id), '[]') AS "lineItems",
     coalesce((SELECT json_agg(json_build_object('sourceFulfillmentId', f2.source_fulfillment_id,
         'fulfillmentId', f2.fulfillment_id, 'hash', f2.hash))
       FROM fulfillment_links f2
       WHERE f2.shop = o.shop AND f2.source_order_id = o.source_order_id), '[]') AS "fulfillments"
   FROM (SELECT CAST(@shop AS TEXT) AS shop, CAST(@sourceOrderId AS TEXT) AS source_order_id) k
   LEFT JOIN order_links o ON o.shop = k.shop AND o.source_order_id = k.source_order_id
   LEFT JOIN order_failures f ON f.shop = k.shop AND f.source_order_id = k.source_order_id`,
);

/**
 * A create's check for another link holding the provider's order ID, with the order's lock
 * taken first in the same statement (LATERAL makes the lock's row the outer one: it is taken
 * once, whatever the check finds). The check is not what the lock guards (other orders' links),
 * so reading it as of the statement's start, before the lock was granted, changes nothing;
 * every statement after it reads what a transaction that held the lock before committed.
 */
const SAME_PROVIDER_ORDER_LOCKED = new Statement(
  "links_same_provider_order_locked",
  `SELECT q.shop, q."sourceOrderId"
   FROM (SELECT pg_advisory_xact_lock(hashtextextended(CAST(@lockKey AS TEXT), 0))) lk
   LEFT JOIN LATERAL (${LINK_SQL.sameProviderOrder}) q ON true`,
);

/**
 * The order link and its line-item links upserted in one statement (a create's links), the
 * lines passed as one JSON array. Each line-item ID once: a second row for the same ID in one
 * INSERT … ON CONFLICT would fail, where one upsert after another updated the first.
 */
const ORDER_WITH_LINES = new Statement(
  "links_order_with_lines",
  `WITH o AS (${LINK_SQL.upsertOrderLink})
   INSERT INTO line_item_links (shop, source_order_id, source_line_item_id, line_item_id, hash, created_at)
   SELECT CAST(@shop AS TEXT), CAST(@sourceOrderId AS TEXT), l."sourceLineItemId", l."lineItemId", l.hash, CAST(@at AS TEXT)
   FROM jsonb_to_recordset(CAST(@lines AS jsonb)) AS l("sourceLineItemId" text, "lineItemId" bigint, hash text)
   ON CONFLICT (shop, source_order_id, line_item_id) DO UPDATE SET
     hash = excluded.hash, canceled_at = NULL`,
);

/** An intent completed and the order marked synced, in one statement. */
const FINISH_SYNCED = new Statement(
  "links_finish_synced",
  `WITH done AS (${LINK_SQL.completeIntent})
   ${LINK_SQL.markSynced}`,
);

/**
 * The link programs on Postgres. Where SQLite relies on its single writer (every write
 * transaction BEGIN IMMEDIATE), each write here runs in a transaction that first takes a lock on
 * the order (`pg_advisory_xact_lock` on the shop and order): two workers that find themselves on
 * the same order (a job taken over from a worker that is slow rather than dead) write its links
 * one after the other, and the check that marks it synced reads what the other committed. The
 * intent protocol is unchanged: `beginIntent` commits before the provider call, and each effect
 * commits with the completion of its intent.
 */
export function pgLinkExecutor(db: Extract<Db, { dialect: "postgres" }>): LinkExecutor {
  const pool = db.pg.$client;

  const loadLinks = async (
    on: TurnQueries,
    shop: string,
    sourceOrderId: string,
  ): Promise<OrderLinks | null> => {
    const order = await SELECT_LINKS.row<OrderRow & Pick<OrderLinks, "lineItems" | "fulfillments">>(
      on,
      { shop, sourceOrderId },
    );
    return order ? orderLinksOf(sourceOrderId, order, order.lineItems, order.fulfillments) : null;
  };

  const step = (on: TurnQueries, s: LinkStep): Promise<unknown> => {
    switch (s.kind) {
      case "run":
        return S[s.statement].run(on, s.params);
      case "row":
        return S[s.statement].row(on, s.params);
      case "rows":
        return S[s.statement].rows(on, s.params);
      case "links":
        return loadLinks(on, s.shop, s.sourceOrderId);
      case "state":
        return SELECT_STATE.row<StateRow & Pick<OrderLinks, "lineItems" | "fulfillments">>(on, {
          shop: s.shop,
          sourceOrderId: s.sourceOrderId,
        }).then((row) =>
          orderStateOf(s.sourceOrderId, row, () => ({
            lineItems: row?.lineItems ?? [],
            fulfillments: row?.fulfillments ?? [],
          })),
        );
      case "orderLink": {
        if (s.lines.length === 0) return S.upsertOrderLink.run(on, s.order);
        // As one upsert after another left them: a repeated line-item ID keeps its first row's
        // source line and takes the last hash.
        const byId = new Map<unknown, Record<string, unknown>>();
        for (const line of s.lines as Record<string, unknown>[]) {
          const first = byId.get(line.lineItemId);
          byId.set(line.lineItemId, first ? { ...first, hash: line.hash } : line);
        }
        return ORDER_WITH_LINES.run(on, { ...s.order, lines: JSON.stringify([...byId.values()]) });
      }
      case "finish":
        return (s.synced ? FINISH_SYNCED : S.completeIntent).run(on, s.params);
    }
  };

  const drive = async <T>(on: TurnQueries, program: LinkProgram<T>): Promise<T> => {
    let next = program.next();
    while (!next.done) next = program.next(await step(on, next.value));
    return next.value;
  };

  /**
   * A transaction holding the order's lock; rolled back on any error. The pool's connections
   * are in pipeline mode (database.ts), and a statement whose answer the program does not use
   * (BEGIN, the lock, the order's links, an `unanswered` run, the intent's completion, COMMIT)
   * goes out at once, behind the statements still in flight, instead of after their answers;
   * those asked for in one turn leave in one socket write. A create's write takes three round
   * trips instead of seven. Postgres runs them in order; one that fails aborts the
   * transaction, so every later one fails and COMMIT rolls back. Its own error is the one
   * thrown.
   */
  const transaction = async <T>(order: OrderKey, program: LinkProgram<T>): Promise<T> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    // The statements asked for in one turn of the event loop leave in one socket write, as
    // node-postgres writes each statement's messages (corked until the turn ends).
    const socket = (client as pg.PoolClient & { connection: pg.Connection }).connection.stream;
    let corked = false;
    const together = () => {
      if (corked) return;
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    };
    // Statements sent without waiting for their answers, in the order they were sent.
    const sent: Promise<unknown>[] = [];
    const send = (statement: Promise<unknown>) => {
      statement.catch(() => {});
      sent.push(statement);
    };
    /** The first failure among the statements sent unanswered, else `error` itself. */
    const cause = async (error: unknown) => {
      for (const result of await Promise.allSettled(sent)) {
        if (result.status === "rejected") return result.reason;
      }
      return error;
    };
    const answer = async <R>(statement: Promise<R>): Promise<R> => {
      try {
        return await statement;
      } catch (error) {
        throw await cause(error);
      }
    };
    try {
      together();
      send(client.query("BEGIN"));
      const lockKey = `${order.shop}/${order.sourceOrderId}`;
      let next = program.next();
      const first = next.done ? undefined : next.value;
      if (first?.kind === "rows" && first.statement === "sameProviderOrder") {
        // A create's first step, with the lock taken in the same statement.
        const found = await answer(
          SAME_PROVIDER_ORDER_LOCKED.rows<{ shop: string | null }>(client, {
            ...first.params,
            lockKey,
          }),
        );
        next = program.next(found.filter((r) => r.shop !== null));
      } else {
        send(client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [lockKey]));
      }
      while (!next.done) {
        together();
        const s = next.value;
        if (s.kind === "orderLink" || s.kind === "finish" || (s.kind === "run" && s.unanswered)) {
          // Its answer is not used (orderLink and finish answer nothing, as on SQLite): the
          // program goes on while it is in flight.
          send(step(client, s));
          next = program.next(undefined);
        } else {
          next = program.next(await answer(step(client, s)));
        }
      }
      const result = next.value;
      together();
      const committed = await answer(client.query("COMMIT"));
      // A transaction that a statement aborted answers COMMIT with ROLLBACK, not an error.
      if (committed.command !== "COMMIT") {
        throw await cause(
          new Error(`the order's links were not written: COMMIT answered ${committed.command}`),
        );
      }
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
  };

  return {
    read: (program) => drive(db.turn, program),
    commit: (program) => drive(db.turn, program),
    write: transaction,
    async writeEach(select, program) {
      let total = 0;
      for (const order of await drive(db.turn, select)) {
        total += await transaction(order, program(order));
      }
      return total;
    },
  };
}
