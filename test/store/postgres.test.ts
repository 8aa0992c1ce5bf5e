import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { Session } from "@shopify/shopify-api";
import { sql } from "drizzle-orm";
import pg from "pg";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { ConfigError } from "../../src/config/env.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { createSecretBox } from "../../src/lib/secret-box.ts";
import { SealedSessionStorage } from "../../src/shopify/install/index.ts";
import {
  createLinkRepository,
  type Db,
  openDatabase,
  ShopRepository,
  waitForDatabase,
} from "../../src/store/index.ts";
import type { OrderCreated } from "../../src/store/link-queries.ts";
import { cliEntry } from "../helpers/cli.ts";
import {
  createTestDatabase,
  onSocketWrites,
  PASSWORD_CHECKED_USER,
  startPostgres,
  TLS_ONLY_USER,
  terminateBackends,
} from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

const opened: Db[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
});

async function postgresStore(): Promise<{ db: Db; url: string }> {
  const url = await createTestDatabase(service("postgresUrl"));
  const db = openDatabase(url);
  opened.push(db);
  await db.ready();
  return { db, url };
}

/** A create's record: order `id` of `shop`, given provider order ID 9,000 + id and `lineItems`. */
const created = (shop: string, id: number, lineItems: OrderCreated["lineItems"]): OrderCreated => ({
  shop,
  sourceOrderId: String(id),
  key: "create",
  storeId: 1001,
  providerBaseUrl: "https://api.example/v1",
  orderId: 9_000 + id,
  orderHash: "h",
  orderName: `#${id}`,
  lineItems,
});

/**
 * Counts every socket write of the store's pooled connections (a round trip starts with one),
 * and the connections taken from the pool.
 */
function countWrites(db: Db): { count: number; acquired: number } {
  if (db.dialect !== "postgres") throw new Error("a Postgres store");
  const counter = { count: 0, acquired: 0 };
  db.pg.$client.on("acquire", (client) => {
    counter.acquired += 1;
    onSocketWrites(client, () => {
      counter.count += 1;
    });
  });
  return counter;
}

describe("the Postgres link store", () => {
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

  it("writes a create in three round trips, the statements it needs no answer from sent at once", async () => {
    const { db } = await postgresStore();
    if (db.dialect !== "postgres") throw new Error("a Postgres store");
    const writes = countWrites(db);
    const repo = createLinkRepository(db);
    const shop = "pipelined.myshopify.com";
    await repo.beginIntent(shop, "801", "create", "createOrder");
    writes.count = 0;
    const synced = await repo.recordOrderCreated(
      created(shop, 801, [{ sourceLineItemId: "1", lineItemId: 77_801, hash: "l" }]),
      { version: "v1", done: (links) => links?.lineItems.length === 1 },
    );
    // BEGIN with the lock and the check; the links with their read-back; the completion and
    // the synced mark with COMMIT. One at a time, it was six.
    expect(writes.count).toBe(3);
    expect(synced).toBe(true);
    const links = await repo.loadLinks(shop, "801");
    expect(links).toMatchObject({ orderId: 9_801, syncedVersion: "v1" });
    expect(links?.lineItems).toEqual([
      expect.objectContaining({ sourceLineItemId: "1", lineItemId: 77_801 }),
    ]);
  });

  it("rolls back a create whose links fail while later statements are in flight, with that failure's error", async () => {
    const { db } = await postgresStore();
    const repo = createLinkRepository(db);
    const shop = "aborted.myshopify.com";
    await repo.beginIntent(shop, "802", "create", "createOrder");
    // Not a BIGINT: the order's links fail in Postgres, after the read-back was sent.
    const create = created(shop, 802, [
      { sourceLineItemId: "1", lineItemId: "not-a-number" as unknown as number, hash: "l" },
    ]);
    const written = repo.recordOrderCreated(create, { version: "v1", done: () => true });
    // The statement's own error, not the "transaction is aborted" of those sent behind it.
    await expect(written).rejects.toMatchObject({ code: "22P02" });
    expect(await repo.loadLinks(shop, "802")).toBeNull();
    // Nothing of the transaction stayed, and the connection is usable: the same create goes through.
    const again = await repo.recordOrderCreated(
      created(shop, 802, [{ sourceLineItemId: "1", lineItemId: 77_802, hash: "l" }]),
      { version: "v1", done: (links) => links?.lineItems.length === 1 },
    );
    expect(again).toBe(true);
    expect(await repo.loadLinks(shop, "802")).toMatchObject({ orderId: 9_802 });
  });

  it("sends the reads and intents of one event-loop turn on one connection, in one socket write", async () => {
    const { db } = await postgresStore();
    const repo = createLinkRepository(db);
    const shops = new ShopRepository(db);
    const shop = "turn.myshopify.com";
    await shops.upsertShop(shop, { storeId: 1001 });
    await repo.beginIntent(shop, "901", "create", "createOrder");
    const writes = countWrites(db);
    // What the sync jobs whose answers arrived together ask for: their shop, their orders'
    // states, a new intent.
    const [record, state, other, intent] = await Promise.all([
      shops.getShop(shop),
      repo.orderState(shop, "901"),
      repo.orderState(shop, "902"),
      repo.beginIntent(shop, "903", "create", "createOrder"),
    ]);
    // One at a time, each took a connection and a write of its own: four.
    expect(writes).toEqual({ count: 1, acquired: 1 });
    expect(record).toMatchObject({ shop, storeId: 1001 });
    expect(state.links).toBeNull();
    expect(other.failure).toBeNull();
    expect(intent).toMatchObject({ status: "pending", attempts: 1 });
  });

  it("fails a query of a turn alone: the others of its turn are answered", async () => {
    const { db } = await postgresStore();
    if (db.dialect !== "postgres") throw new Error("a Postgres store");
    const writes = countWrites(db);
    const [before, failed, after] = await Promise.allSettled([
      db.turn.query({ text: "SELECT 1 AS one" }),
      db.turn.query({ text: "SELECT CAST('x' AS BIGINT)" }),
      db.turn.query({ text: "SELECT 2 AS two" }),
    ]);
    expect(writes).toEqual({ count: 1, acquired: 1 });
    expect(before).toMatchObject({ status: "fulfilled", value: { rows: [{ one: 1 }] } });
    expect(failed).toMatchObject({ status: "rejected", reason: { code: "22P02" } });
    expect(after).toMatchObject({ status: "fulfilled", value: { rows: [{ two: 2 }] } });
    // The connection went back to the pool usable.
    expect((await db.turn.query({ text: "SELECT 3 AS three" })).rows).toEqual([{ three: 3 }]);
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

describe("a Postgres that answers but says no", () => {
  // Before, each was "unreachable (3D000)" on every attempt, a worker's forever, and the fix
  // given was to start Postgres.
  it("stops the start-up wait at once, naming the database or the user and the fix", async () => {
    const logger = createLogger("silent");
    const refusal = async (change: (url: URL) => void) => {
      const url = new URL(service("postgresUrl"));
      change(url);
      const db = openDatabase(url.toString(), { poolSize: 1 });
      try {
        const error = await waitForDatabase(db, { logger }).then(
          () => null,
          (rejected: unknown) => rejected,
        );
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      } finally {
        await db.close();
      }
    };
    const where = (path: string) => {
      const url = new URL(service("postgresUrl"));
      return `postgres://${url.host}${path}`;
    };
    expect(
      await refusal((url) => {
        url.pathname = "/no_such_db";
      }),
    ).toBe(
      `DATABASE_URL ${where("/no_such_db")}: database "no_such_db" does not exist (3D000); create the database (createdb NAME), or fix its name in DATABASE_URL`,
    );
    expect(
      await refusal((url) => {
        url.username = "ghost";
      }),
    ).toBe(
      `DATABASE_URL ${where(new URL(service("postgresUrl")).pathname)}: role "ghost" does not exist (28000); fix the user in DATABASE_URL, or let it connect in the server's pg_hba.conf`,
    );
    // A user whose password the server checks: a wrong one, and none at all (before, pg's own
    // "SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string", retried).
    const admin = new pg.Client({ connectionString: service("postgresUrl") });
    await admin.connect();
    await admin.query(`DROP ROLE IF EXISTS ${PASSWORD_CHECKED_USER}`).catch(() => {});
    await admin.query(`CREATE ROLE ${PASSWORD_CHECKED_USER} LOGIN PASSWORD 'right-secret'`);
    const wrongPassword = await refusal((url) => {
      url.username = PASSWORD_CHECKED_USER;
      url.password = "wrong-secret";
    });
    expect(wrongPassword).toBe(
      `DATABASE_URL ${where(new URL(service("postgresUrl")).pathname)}: password authentication failed for user "${PASSWORD_CHECKED_USER}" (28P01); put the user's password in DATABASE_URL, postgres://USER:PASSWORD@host/db`,
    );
    expect(wrongPassword).not.toContain("secret");
    expect(
      await refusal((url) => {
        url.username = PASSWORD_CHECKED_USER;
      }),
    ).toBe(
      `DATABASE_URL ${where(new URL(service("postgresUrl")).pathname)}: the server asks user "${PASSWORD_CHECKED_USER}" for a password and DATABASE_URL has none; put the user's password in DATABASE_URL, postgres://USER:PASSWORD@host/db`,
    );
    // TLS asked for from a server without it: before, "unreachable (The server does not
    // support SSL connections)" on every attempt.
    expect(
      await refusal((url) => {
        url.searchParams.set("sslmode", "require");
      }),
    ).toBe(
      `DATABASE_URL ${where(new URL(service("postgresUrl")).pathname)}?sslmode=require: the server does not support TLS and DATABASE_URL asks for it (sslmode); turn TLS on in the server, or take sslmode out of DATABASE_URL`,
    );
    // A user that may log in but not create the connector's tables (a database someone else
    // owns): before, "unreachable (Failed query: CREATE SCHEMA IF NOT EXISTS "drizzle"…)".
    const database = new URL(await createTestDatabase(service("postgresUrl"))).pathname;
    await admin.query("DROP ROLE IF EXISTS limited_user").catch(() => {});
    await admin.query("CREATE ROLE limited_user LOGIN");
    await admin.end();
    expect(
      await refusal((url) => {
        url.username = "limited_user";
        url.pathname = database;
      }),
    ).toBe(
      `DATABASE_URL ${where(database)}: permission denied for database ${database.slice(1)} (42501); let the user in DATABASE_URL create schemas and tables in the database (GRANT CREATE ON DATABASE …, and on Postgres 15 or newer GRANT CREATE ON SCHEMA public …), or connect as the database's owner`,
    );
  });
});

describe("a Postgres whose TLS certificate is signed by a CA Node does not know", () => {
  it("stops the start-up wait at once, and connects with the fixes it names", async () => {
    // As a managed Postgres's own CA: before, "unreachable (self-signed certificate)" on every
    // attempt, however long the wait.
    const server = await startPostgres({ tls: true });
    onTestFinished(() => server.stop());
    const urlWith = (params: Record<string, string>, host = "127.0.0.1") => {
      const url = new URL(server.url);
      url.hostname = host;
      for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
      return url.toString();
    };
    const start = async (url: string) => {
      const db = openDatabase(url, { poolSize: 1 });
      onTestFinished(() => db.close());
      const outcome = await waitForDatabase(db, { logger: createLogger("silent") }).then(
        () => null,
        (rejected: unknown) => rejected,
      );
      return { db, outcome };
    };
    const refusal = async (url: string) => {
      const { outcome } = await start(url);
      expect(outcome).toBeInstanceOf(ConfigError);
      return (outcome as Error).message;
    };
    const port = new URL(server.url).port;
    // pg takes sslmode=require as verify-full.
    expect(await refusal(urlWith({ sslmode: "require" }))).toBe(
      `DATABASE_URL postgres://127.0.0.1:${port}/postgres?sslmode=require: the server's TLS certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); give its CA in DATABASE_URL (sslrootcert=/path/to/ca.pem), or sslmode=no-verify to encrypt without checking it`,
    );
    // A user the server takes only over TLS, and a URL without sslmode: before, "fix the user in
    // DATABASE_URL", which is not the fix.
    expect(await refusal(urlWith({}).replace("//connector@", `//${TLS_ONLY_USER}@`))).toBe(
      `DATABASE_URL postgres://127.0.0.1:${port}/postgres: pg_hba.conf rejects connection for host "127.0.0.1", user "${TLS_ONLY_USER}", database "postgres", no encryption (28000); add sslmode=require to DATABASE_URL if the server takes the user only over TLS (a managed Postgres's usual rule), or let it connect in the server's pg_hba.conf`,
    );
    // A process that starts with it says that line alone: before, node-postgres's own warning
    // came first, eight lines on what `require` will mean in pg 9.
    const cli = await promisify(execFile)(process.execPath, [...cliEntry(), "shops", "list"], {
      cwd: resolve(import.meta.dirname, "../.."),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        REDIS_URL: service("redisUrl"),
        DATABASE_URL: urlWith({ sslmode: "require" }),
      },
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(cli).toMatchObject({
      code: 2,
      stderr: `connector: DATABASE_URL postgres://127.0.0.1:${port}/postgres?sslmode=require: the server's TLS certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); give its CA in DATABASE_URL (sslrootcert=/path/to/ca.pem), or sslmode=no-verify to encrypt without checking it\n`,
    });
    // A CA file it cannot read: before, "unreachable (ENOENT)" on every attempt, and "start
    // Postgres".
    expect(await refusal(urlWith({ sslmode: "require", sslrootcert: "/nonexistent/ca.pem" }))).toBe(
      `DATABASE_URL postgres://127.0.0.1:${port}/postgres?sslmode=require&sslrootcert=%2Fnonexistent%2Fca.pem: sslrootcert=/nonexistent/ca.pem cannot be read (ENOENT); give the path of a PEM file this user may read`,
    );
    // Its CA given, and a host name the certificate does not name.
    const trusted = { sslmode: "require", sslrootcert: server.certificate };
    expect(await refusal(urlWith(trusted))).toMatch(
      /: the server's TLS certificate is for another host name \(ERR_TLS_CERT_ALTNAME_INVALID\); put a host name it names in DATABASE_URL, or sslmode=no-verify to encrypt without checking it$/,
    );
    // Both fixes connect, over TLS.
    for (const url of [urlWith(trusted, "localhost"), urlWith({ sslmode: "no-verify" })]) {
      const { db, outcome } = await start(url);
      expect(outcome).toBeNull();
      if (db.dialect !== "postgres") throw new Error("a Postgres store");
      const { rows } = await db.pg.execute(
        sql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`,
      );
      expect(rows).toEqual([{ ssl: true }]);
    }
  });
});

describe("a Postgres connection dropped under a query", () => {
  const FIXTURE = resolve(import.meta.dirname, "../fixtures/dropped-postgres.ts");

  /** Runs the fixture, ends its waiting query's connection from the server, returns its output. */
  async function dropUnder(where: "turn" | "transaction") {
    const url = await createTestDatabase(service("postgresUrl"));
    const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, url, where], {
      cwd: resolve(import.meta.dirname, "../.."),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    // Its query is ended as soon as the server shows it.
    await expect
      .poll(() => terminateBackends(url, "query LIKE '%dropped_by_test%'"), { timeout: 30_000 })
      .toBe(1);
    return { code: await exited, output };
  }

  it("fails a read outside a transaction, and the process goes on with a new connection", async () => {
    const { code, output } = await dropUnder("turn");
    // 57P01: the server's "terminating connection due to administrator command".
    expect(output).toBe("failed 57P01\nanswered 1\n");
    expect(code).toBe(0);
  }, 60_000);

  it("fails a transaction, and the process goes on with a new connection", async () => {
    const { code, output } = await dropUnder("transaction");
    expect(output).toBe("failed without a SQLSTATE\nanswered 1\n");
    expect(code).toBe(0);
  }, 60_000);
});

describe("a running process's Postgres lost and back", () => {
  it("says once that DATABASE_URL is unreachable and once that it answers again", async () => {
    const url = await createTestDatabase(service("postgresUrl"));
    const messages: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        messages.push(JSON.parse(String(chunk)).msg);
        done();
      },
    });
    const db = openDatabase(url, { logger: createLogger("info", sink) });
    opened.push(db);
    await db.ready();
    if (db.dialect !== "postgres") throw new Error("a Postgres store");
    // Four connections in use, as a busy worker's are.
    await Promise.all([1, 2, 3, 4].map(() => db.pg.execute(sql`SELECT pg_sleep(0.05)`)));
    // Every one of them ends, as in a restart of the server.
    expect(await terminateBackends(url)).toBeGreaterThanOrEqual(1);
    const name = new URL(url).pathname.slice(1);
    // The pool learns of it as each connection's end arrives, then connects again.
    await expect
      .poll(async () => {
        try {
          return (await db.turn.query({ text: "SELECT 1 AS one" })).rows[0].one;
        } catch {
          return 0;
        }
      })
      .toBe(1);
    const where = `127.0.0.1:${new URL(url).port}/${name}`;
    const said = messages.filter((m) => m.startsWith("DATABASE_URL"));
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^DATABASE_URL \S+ is unreachable \(.+\): the jobs that need it fail/);
    expect(said[0]).toContain(where);
    expect(said[1]).toMatch(/^DATABASE_URL \S+ is reachable again after \d+ s$/);
  });
});
