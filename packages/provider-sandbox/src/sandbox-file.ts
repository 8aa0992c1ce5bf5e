import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import type { StoredOrder } from "./orders.ts";

type Counters = Record<"nextOrderId" | "nextLineItemId" | "nextFulfillmentId", number>;

/**
 * The sandbox's own SQLite file (`sandbox.sqlite` beside the connector's database under
 * `npm start`), so a restarted sandbox continues where it stopped: the orders it holds and the
 * IDs it hands out next. A sandbox that handed out its IDs again from the start after a restart
 * made the connector's kept links point at other orders. Each order is one JSON row, written
 * through on every change.
 */
export class SandboxFile {
  readonly #db: BetterSqlite3.Database;
  readonly #upsert;
  readonly #counter;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, "a", 0o600));
    this.#db = new BetterSqlite3(path);
    this.#db.pragma("journal_mode = WAL");
    this.#db.exec(`
      CREATE TABLE IF NOT EXISTS orders (order_id INTEGER PRIMARY KEY, json TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    `);
    this.#upsert = this.#db.prepare(
      "INSERT INTO orders (order_id, json) VALUES (?, ?) ON CONFLICT (order_id) DO UPDATE SET json = excluded.json",
    );
    this.#counter = this.#db.prepare(
      "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    );
  }

  load(): { orders: StoredOrder[]; counters: Partial<Counters> } {
    const orders = (this.#db.prepare("SELECT json FROM orders").all() as { json: string }[]).map(
      (row) => JSON.parse(row.json) as StoredOrder,
    );
    const counters = Object.fromEntries(
      (
        this.#db.prepare("SELECT name, value FROM counters").all() as {
          name: string;
          value: number;
        }[]
      ).map((row) => [row.name, row.value]),
    ) as Partial<Counters>;
    return { orders, counters };
  }

  saveOrder(order: StoredOrder, counters: Counters): void {
    this.#db.transaction(() => {
      this.#upsert.run(order.orderId, JSON.stringify(order));
      for (const [name, value] of Object.entries(counters)) this.#counter.run(name, value);
    })();
  }

  deleteOrder(orderId: number): void {
    this.#db.prepare("DELETE FROM orders WHERE order_id = ?").run(orderId);
  }

  /** Empties the file: no order, IDs from the start (`connector sandbox --reset`). */
  clear(): void {
    this.#db.exec("DELETE FROM orders; DELETE FROM counters;");
  }

  close(): void {
    this.#db.close();
  }
}
