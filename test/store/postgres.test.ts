import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session } from "@shopify/shopify-api";
import { getTableColumns, getTableName, type Table } from "drizzle-orm";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createSecretBox } from "../../src/lib/secret-box.ts";
import { SealedSessionStorage } from "../../src/shopify/install/index.ts";
import { createLinkRepository, type Db, openDatabase } from "../../src/store/index.ts";
import * as sqliteSchema from "../../src/store/schema.ts";
import * as pgSchema from "../../src/store/schema-pg.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

const opened: Db[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function postgresStore(): Promise<{ db: Db; url: string }> {
  const url = await createTestDatabase(service("postgresUrl"));
  const db = openDatabase(url);
  opened.push(db);
  await db.ready();
  return { db, url };
}

/** Each table's columns as the database itself reports them: name → nullable. */
async function postgresColumns(url: string): Promise<Record<string, Record<string, boolean>>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ t: string; c: string; nullable: string }>(
      `SELECT table_name AS t, column_name AS c, is_nullable AS nullable
       FROM information_schema.columns WHERE table_schema = 'public'`,
    );
    const tables: Record<string, Record<string, boolean>> = {};
    for (const row of rows) {
      tables[row.t] = { ...tables[row.t], [row.c]: row.nullable === "YES" };
    }
    return tables;
  } finally {
    await client.end();
  }
}

function sqliteColumns(db: Db): Record<string, Record<string, boolean>> {
  if (db.dialect !== "sqlite") throw new Error("a SQLite store was expected");
  const client = db.sqlite.$client;
  const names = client
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '__drizzle%'",
    )
    .pluck()
    .all() as string[];
  const tables: Record<string, Record<string, boolean>> = {};
  for (const name of names) {
    const columns = client.prepare(`PRAGMA table_info(${name})`).all() as {
      name: string;
      notnull: number;
      pk: number;
    }[];
    tables[name] = Object.fromEntries(columns.map((c) => [c.name, c.notnull === 0 && c.pk === 0]));
  }
  return tables;
}

describe("the Postgres link store", () => {
  it("has the SQLite schema's tables and columns, in the schema and in what its migrations build", async () => {
    // The two drizzle schemas: same tables, same SQL column names, same JavaScript keys.
    const shape = (schema: Record<string, unknown>) =>
      Object.fromEntries(
        Object.values(schema)
          .filter((value): value is Table => typeof value === "object" && value !== null)
          .map((table) => [
            getTableName(table),
            Object.fromEntries(
              Object.entries(getTableColumns(table)).map(([key, column]) => [
                key,
                `${column.name}${column.notNull ? "" : "?"}`,
              ]),
            ),
          ]),
      );
    expect(shape(pgSchema)).toEqual(shape(sqliteSchema));

    // What the committed migrations of each engine really create.
    const dir = mkdtempSync(join(tmpdir(), "parity-"));
    dirs.push(dir);
    const sqlite = openDatabase(join(dir, "links.sqlite"));
    opened.push(sqlite);
    const { url } = await postgresStore();
    expect(await postgresColumns(url)).toEqual(sqliteColumns(sqlite));
  });

  it("migrates once when every process of a deployment starts at the same moment", async () => {
    const url = await createTestDatabase(service("postgresUrl"));
    const stores = Array.from({ length: 4 }, () => openDatabase(url));
    opened.push(...stores);
    await Promise.all(stores.map((db) => db.ready()));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations",
    );
    await client.end();
    // Each committed migration applied once, however many processes raced to apply it.
    const journal = JSON.parse(readFileSync("drizzle/postgres/meta/_journal.json", "utf8")) as {
      entries: unknown[];
    };
    expect(rows[0]).toEqual({ n: journal.entries.length });
  });

  it("orders two writers of one order: the later one's synced check sees the earlier one's effect", async () => {
    const { db } = await postgresStore();
    const other = openDatabase(
      (db.dialect === "postgres" && db.pg.$client.options.connectionString) || "",
    );
    opened.push(other);
    const shop = "race.myshopify.com";
    const [a, b] = [createLinkRepository(db), createLinkRepository(other)];
    for (let round = 0; round < 20; round++) {
      const order = `70${round}`;
      await a.beginIntent(shop, order, "create", "createOrder");
      await a.recordOrderCreated({
        shop,
        sourceOrderId: order,
        key: "create",
        storeId: 1001,
        providerBaseUrl: "https://api.example/v1",
        orderId: 9_000 + round,
        orderHash: "h",
        orderName: `#${round}`,
        lineItems: [],
      });
      // Two workers add one line each, at once; the order is done when both lines are linked.
      const done = {
        version: "v1",
        done: (links: { lineItems: unknown[] } | null) => (links?.lineItems.length ?? 0) === 2,
      };
      const add = (repo: typeof a, line: number) =>
        repo.beginIntent(shop, order, `line-${line}`, "addLineItem").then(() =>
          repo.recordLineItemAdded(
            {
              shop,
              sourceOrderId: order,
              key: `line-${line}`,
              sourceLineItemId: String(line),
              lineItemId: line,
              hash: "l",
            },
            done,
          ),
        );
      const marked = await Promise.all([add(a, 1), add(b, 2)]);
      // Exactly one of the two writes saw both lines: the second to take the order's lock.
      expect(marked.filter(Boolean)).toHaveLength(1);
      expect((await a.getOrderLinkRow(shop, order))?.syncedVersion).toBe("v1");
    }
  });

  it("keeps the Shopify sessions on the same database, their tokens sealed", async () => {
    const { db, url } = await postgresStore();
    const box = createSecretBox(Buffer.alloc(32, 9).toString("base64"));
    const sessions = new SealedSessionStorage(db, box);
    const expires = new Date(Date.now() + 3_600_000);
    await sessions.storeSession(
      new Session({
        id: "offline_pg.myshopify.com",
        shop: "pg.myshopify.com",
        state: "s",
        isOnline: false,
        accessToken: "shpat_postgres_token",
        scope: "read_orders",
        expires,
      }),
    );
    const loaded = await sessions.loadSession("offline_pg.myshopify.com");
    expect(loaded?.accessToken).toBe("shpat_postgres_token");
    expect(loaded?.expires?.getTime()).toBe(expires.getTime());
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(`SELECT "accessToken" FROM session`);
    await client.end();
    expect(rows[0]?.accessToken).toMatch(/^v2:/);
    expect(JSON.stringify(rows)).not.toContain("shpat_postgres_token");
  });
});
