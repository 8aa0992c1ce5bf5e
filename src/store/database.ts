import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import BetterSqlite3 from "better-sqlite3";
import { type BetterSQLite3Database, drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { ensurePrivateDir } from "../lib/private-files.ts";
import * as schema from "./schema.ts";

export type Db = BetterSQLite3Database<typeof schema> & { $client: BetterSqlite3.Database };

/** The migrations folder, seen from the sources (src/store/) or from the bundle (dist/). */
const MIGRATIONS = ["../../drizzle", "../drizzle"]
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((dir) => existsSync(join(dir, "meta", "_journal.json"))) as string;

/**
 * Opens the SQLite file in WAL mode (readers never block the writer), waits up to 5 s on a
 * lock held by another process instead of failing with SQLITE_BUSY, and applies the committed
 * migrations (drizzle's migrator runs them in one transaction, so concurrent starts are safe).
 */
export function openDatabase(path: string): Db {
  if (path !== ":memory:") {
    // Links and sealed secrets: readable by the connector's user only. SQLite gives its -wal
    // and -shm files the database file's mode.
    ensurePrivateDir(dirname(path));
    closeSync(openSync(path, "a", 0o600));
    chmodSync(path, 0o600);
  }
  const sqlite = new BetterSqlite3(path);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("foreign_keys = ON");
  const db = drizzle(sqlite, { schema }) as Db;
  try {
    migrate(db, { migrationsFolder: MIGRATIONS });
  } catch (error) {
    // Another process applied the same migration between our check and our write: its
    // transaction won; ours sees the result on a second look.
    if (!/already exists/.test((error as Error).message)) throw error;
    migrate(db, { migrationsFolder: MIGRATIONS });
  }
  return db;
}
