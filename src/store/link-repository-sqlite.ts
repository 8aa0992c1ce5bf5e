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
 * was still a visible share after that: bench:worker profile), and the writes of one event-loop
 * turn one better-sqlite3 transaction (group commit, below): BEGIN IMMEDIATE, so concurrent
 * worker processes wait on busy_timeout instead of failing. SQLite has a single writer, so the
 * order needs no lock of its own.
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
      case "orderLink": {
        const { shop, sourceOrderId, at } = s.order;
        statements.upsertOrderLink.run(s.order);
        for (const line of s.lines) {
          statements.upsertLineItemLink.run({ ...line, shop, sourceOrderId, at });
        }
        return undefined;
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

  // Group commit: the writes asked for in one turn of the event loop (the 16 concurrent jobs'
  // intents and finishing writes, whose answers arrive together) run as one BEGIN IMMEDIATE
  // transaction, each in a savepoint of its own, and each answer is given once that
  // transaction has committed. A commit (its WAL pages) cost more CPU than the statements it
  // held (bench:worker profile); one commit per turn writes the pages the writes share once.
  // A write that fails rolls back to its savepoint and rejects alone; the others commit. A
  // write alone in its turn runs without a savepoint (two statements fewer).
  const each = client.transaction((program: LinkProgram<unknown>) => drive(program));
  const together = client.transaction((batch: Queued[]) => {
    // Alone in its turn (the usual case outside a flood), a write needs no savepoint: if it
    // fails, the transaction it would have shared is its own, and rolls back whole.
    const [only] = batch;
    if (batch.length === 1 && only) {
      only.result = { ok: true, value: drive(only.program) };
      return;
    }
    for (const queued of batch) {
      try {
        queued.result = { ok: true, value: each(queued.program) };
      } catch (error) {
        // SQLite ended the whole transaction itself (a full disk, an I/O error): nothing of
        // the batch is written, so nothing may be answered as written.
        if (!client.inTransaction) throw error;
        queued.result = { ok: false, error };
      }
    }
  }).immediate;

  let queue: Queued[] = [];
  const flush = () => {
    const batch = queue;
    queue = [];
    try {
      together(batch);
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      return;
    }
    for (const queued of batch) {
      const result = queued.result as Settled;
      if (result.ok) queued.resolve(result.value);
      else queued.reject(result.error);
    }
  };
  const enqueue = <T>(program: LinkProgram<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ program, resolve: resolve as (value: unknown) => void, reject });
    });

  return {
    read: async (program) => drive(program),
    commit: enqueue,
    write: (_order, program) => enqueue(program),
    writeEach: (select, program) =>
      enqueue(
        (function* () {
          let total = 0;
          for (const order of yield* select) total += yield* program(order);
          return total;
        })(),
      ),
  };
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A write waiting for the next group commit, and once run, how it ended. */
interface Queued {
  program: LinkProgram<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  result?: Settled;
}
