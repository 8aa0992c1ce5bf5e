import type BetterSqlite3 from "better-sqlite3";
import type { OrderLinks } from "../sync/links.ts";
import type { Db } from "./database.ts";
import type { LinkExecutor, LinkProgram, LinkStatement, LinkStep } from "./link-effects.ts";
import {
  LINK_SQL,
  type OrderRow,
  orderLinksOf,
  orderStateOf,
  type StateRow,
} from "./link-queries.ts";

/**
 * The link programs on SQLite, run synchronously: each statement of `LINK_SQL` prepared once as
 * a plain better-sqlite3 statement (the sync loop reads the links before every provider call,
 * and building the query each time cost more CPU than the rest of a job; drizzle's row mapping
 * was still a visible share after that: bench:worker profile), and each write one better-sqlite3
 * transaction: BEGIN IMMEDIATE, so concurrent worker processes wait on busy_timeout instead of
 * failing. SQLite has a single writer, so the order needs no lock of its own.
 */
export function sqliteLinkExecutor(db: Extract<Db, { dialect: "sqlite" }>): LinkExecutor {
  const client = db.sqlite.$client;
  // Statements take the input as named parameters; keys they do not name are ignored.
  const statements = Object.fromEntries(
    Object.entries(LINK_SQL).map(([name, text]) => [name, client.prepare(text)]),
  ) as Record<LinkStatement, BetterSqlite3.Statement>;

  const loadLinks = (shop: string, sourceOrderId: string): OrderLinks | null => {
    const key = { shop, sourceOrderId };
    const order = statements.selectOrder.get(key) as OrderRow | undefined;
    if (!order) return null;
    const { lineItems, fulfillments } = children(key);
    return orderLinksOf(sourceOrderId, order, lineItems, fulfillments);
  };

  const children = (key: { shop: string; sourceOrderId: string }) => ({
    lineItems: statements.selectLines.all(key) as OrderLinks["lineItems"],
    fulfillments: statements.selectFulfillments.all(key) as OrderLinks["fulfillments"],
  });

  const step = (s: LinkStep): unknown => {
    switch (s.kind) {
      case "run":
        return statements[s.statement].run(s.params).changes;
      case "row":
        return statements[s.statement].get(s.params);
      case "rows":
        return statements[s.statement].all(s.params);
      case "links":
        return loadLinks(s.shop, s.sourceOrderId);
      case "state": {
        const key = { shop: s.shop, sourceOrderId: s.sourceOrderId };
        const row = statements.selectState.get(key) as StateRow | undefined;
        return orderStateOf(s.sourceOrderId, row, () => children(key));
      }
      case "finish":
        statements.completeIntent.run(s.params);
        if (s.synced) statements.markSynced.run(s.params);
        return undefined;
    }
  };

  const drive = <T>(program: LinkProgram<T>): T => {
    let next = program.next();
    while (!next.done) next = program.next(step(next.value));
    return next.value;
  };

  const transaction = client.transaction((program: LinkProgram<unknown>) => drive(program))
    .immediate as <T>(program: LinkProgram<T>) => T;

  return {
    read: async (program) => drive(program),
    write: async (_order, program) => transaction(program),
    writeEach: async (select, program) =>
      transaction(
        (function* () {
          let total = 0;
          for (const order of yield* select) total += yield* program(order);
          return total;
        })(),
      ),
  };
}
