import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import { getTableConfig as pgTableConfig } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteTableConfig } from "drizzle-orm/sqlite-core";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type Db, openDatabase } from "../../src/store/index.ts";
import * as sqliteSchema from "../../src/store/schema.ts";
import * as pgSchema from "../../src/store/schema-pg.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

/**
 * schema.ts and schema-pg.ts are twins (drizzle has no table definition both engines take): the
 * repositories run one query text on either, so every table, column, key and index of one must
 * be in the other, with the same JavaScript type.
 */

const opened: Db[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const tablesOf = (schema: Record<string, unknown>): Table[] =>
  Object.values(schema).filter(
    (value): value is Table => typeof value === "object" && value !== null,
  );

/**
 * The columns whose JavaScript type differs on purpose: the Shopify session's expiry times are
 * TIMESTAMP on Postgres, as `@shopify/shopify-app-session-storage-drizzle` reads them there.
 */
const SESSION_DATES: Record<string, string> = {
  "session.expires": "date",
  "session.refreshTokenExpires": "date",
};

/** What both engines' `getTableConfig` say of a table's keys and indexes. */
interface KeysAndIndexes {
  primaryKeys: { columns: { name: string }[] }[];
  uniqueConstraints: { columns: { name: string }[] }[];
  indexes: { config: { name: string; unique: boolean; columns: unknown[] } }[];
}
type TableConfig = (table: never) => KeysAndIndexes;

/** A table as drizzle describes it: columns (SQL name, type, null, default, key) and indexes. */
function shape(table: Table, config: TableConfig) {
  const name = getTableName(table);
  const { indexes, primaryKeys, uniqueConstraints } = config(table as never);
  return {
    columns: Object.fromEntries(
      Object.entries(getTableColumns(table)).map(([key, column]) => [
        key,
        {
          name: column.name,
          type: SESSION_DATES[`${name}.${key}`] ?? column.dataType,
          notNull: column.notNull,
          default: String(column.default),
          primary: column.primary,
        },
      ]),
    ),
    primaryKeys: primaryKeys.map((pk) => pk.columns.map((c) => c.name)),
    unique: uniqueConstraints.map((u) => u.columns.map((c) => c.name)),
    indexes: Object.fromEntries(
      indexes.map((index) => [
        index.config.name,
        {
          unique: index.config.unique,
          columns: index.config.columns.map((c) => (c as { name?: string }).name ?? String(c)),
        },
      ]),
    ),
  };
}

const shapes = (schema: Record<string, unknown>, config: TableConfig) =>
  Object.fromEntries(tablesOf(schema).map((table) => [getTableName(table), shape(table, config)]));

/** Each table's columns as the database itself reports them: name → nullable. */
type Columns = Record<string, Record<string, boolean>>;
/** Each named index as the database reports it: "table.index" → unique, columns. */
type Indexes = Record<string, { unique: boolean; columns: string[] }>;

async function postgresCatalog(url: string): Promise<{ columns: Columns; indexes: Indexes }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ t: string; c: string; nullable: string }>(
      `SELECT table_name AS t, column_name AS c, is_nullable AS nullable
       FROM information_schema.columns WHERE table_schema = 'public'`,
    );
    const columns: Columns = {};
    for (const row of rows) {
      columns[row.t] = { ...columns[row.t], [row.c]: row.nullable === "YES" };
    }
    // Named indexes only: a primary key's index is named by each engine its own way.
    const { rows: defs } = await client.query<{ t: string; i: string; def: string }>(
      `SELECT c.relname AS t, i.relname AS i, pg_get_indexdef(x.indexrelid) AS def
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
         JOIN pg_class c ON c.oid = x.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND NOT x.indisprimary`,
    );
    const indexes: Indexes = {};
    for (const { t, i, def } of defs) {
      const list = /\(([^)]*)\)\s*$/.exec(def)?.[1] ?? "";
      indexes[`${t}.${i}`] = {
        unique: def.startsWith("CREATE UNIQUE"),
        columns: list.split(",").map((c) => c.trim().replaceAll('"', "")),
      };
    }
    return { columns, indexes };
  } finally {
    await client.end();
  }
}

function sqliteCatalog(db: Db): { columns: Columns; indexes: Indexes } {
  if (db.dialect !== "sqlite") throw new Error("a SQLite store was expected");
  const client = db.sqlite.$client;
  const names = client
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'",
    )
    .pluck()
    .all() as string[];
  const columns: Columns = {};
  const indexes: Indexes = {};
  for (const name of names) {
    const info = client.prepare(`PRAGMA table_info(${name})`).all() as {
      name: string;
      notnull: number;
      pk: number;
    }[];
    columns[name] = Object.fromEntries(info.map((c) => [c.name, c.notnull === 0 && c.pk === 0]));
    const list = client.prepare(`PRAGMA index_list(${name})`).all() as {
      name: string;
      unique: number;
      origin: string;
    }[];
    // Named indexes only (origin "c": CREATE INDEX); a primary key's index is "pk".
    for (const index of list.filter((i) => i.origin === "c")) {
      const cols = client.prepare(`PRAGMA index_info(${index.name})`).all() as {
        seqno: number;
        name: string;
      }[];
      indexes[`${name}.${index.name}`] = {
        unique: index.unique === 1,
        columns: cols.sort((a, b) => a.seqno - b.seqno).map((c) => c.name),
      };
    }
  }
  return { columns, indexes };
}

describe("the SQLite and Postgres schemas", () => {
  it("name the same tables, columns (type, null, default, key) and indexes in drizzle", () => {
    const sqlite = shapes(sqliteSchema, sqliteTableConfig as TableConfig);
    const postgres = shapes(pgSchema, pgTableConfig as TableConfig);
    expect(Object.keys(sqlite).length).toBeGreaterThan(10);
    expect(postgres).toEqual(sqlite);
  });

  it("build the same tables, columns, nullability and indexes through their migrations", async () => {
    const dir = mkdtempSync(join(tmpdir(), "parity-"));
    dirs.push(dir);
    const sqlite = openDatabase(join(dir, "links.sqlite"));
    opened.push(sqlite);
    const url = await createTestDatabase(service("postgresUrl"));
    const postgres = openDatabase(url);
    opened.push(postgres);
    await postgres.ready();
    const fromSqlite = sqliteCatalog(sqlite);
    expect(Object.keys(fromSqlite.indexes).length).toBeGreaterThan(5);
    expect(await postgresCatalog(url)).toEqual(fromSqlite);
  });
});
