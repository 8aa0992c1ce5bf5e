import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type BetterSqlite3 from "better-sqlite3";
import { sql } from "drizzle-orm";
import { type BetterSQLite3Database, drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { drizzle as drizzlePg, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import type { Logger } from "pino";
import { ConfigError, sslModeOf } from "../config/env.ts";
import { type Heartbeat, outageLines, waitUntilReachable } from "../lib/outage.ts";
import { redactedUrl } from "../lib/redact.ts";
import { certificateRefusal } from "../lib/tls-refusal.ts";
import * as schema from "./schema.ts";
import * as pgSchema from "./schema-pg.ts";
import { openSqliteFile } from "./sqlite-file.ts";

export type SqliteDb = BetterSQLite3Database<typeof schema> & { $client: BetterSqlite3.Database };
export type PgDb = NodePgDatabase<typeof pgSchema> & { $client: pg.Pool };

/** Tuning of a Postgres link store (DATABASE_POOL_SIZE, DATABASE_STATEMENT_TIMEOUT_MS). */
export interface PostgresOptions {
  poolSize?: number;
  statementTimeoutMs?: number;
  /** Where a running process says that it lost Postgres, and that it has it back (`watched`). */
  logger?: Logger;
}

/**
 * The link store: SQLite (the embedded default, `DATABASE_PATH`) or Postgres (`DATABASE_URL`).
 *
 * `orm` and `t` are what the repositories' shared queries are written against: drizzle's query
 * builder and the tables of the engine in use. They are typed as SQLite's; on Postgres they are
 * Postgres's builder and `schema-pg.ts`'s tables, which have the same names and JavaScript types
 * column for column (`test/store/schema-parity.test.ts`), so one query text serves both. The
 * shared queries are awaited (never `.get()`/`.all()`/`.run()`, which only SQLite has); what
 * differs (prepared statements, transactions) is written per engine with `sqlite` and `pg`.
 */
export type Db =
  | {
      dialect: "sqlite";
      orm: SqliteDb;
      t: typeof schema;
      sqlite: SqliteDb;
      ready(): Promise<void>;
      close(): Promise<void>;
    }
  | {
      dialect: "postgres";
      /** DATABASE_URL as given, for the lines that name it. */
      url: string;
      orm: SqliteDb;
      t: typeof schema;
      pg: PgDb;
      /** Queries outside a transaction, those of one event-loop turn on one connection. */
      turn: TurnQueries;
      ready(): Promise<void>;
      close(): Promise<void>;
    };

/** The migrations folder, seen from the sources (src/store/) or from the bundle (dist/). */
const MIGRATIONS = ["../../drizzle", "../drizzle"]
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((dir) => existsSync(join(dir, "meta", "_journal.json"))) as string;

export const isPostgresUrl = (target: string) => /^postgres(ql)?:\/\//.test(target);

/**
 * Opens the link store: a `postgres://` URL, or a SQLite file path. SQLite is ready at once;
 * Postgres connects and applies its migrations in `ready()`, which every process awaits
 * before it serves.
 */
export function openDatabase(target: string, options: PostgresOptions = {}): Db {
  return isPostgresUrl(target) ? openPostgres(target, options) : openSqlite(target);
}

/**
 * Opens the SQLite file in WAL mode (readers never block the writer), waits up to 5 s on a
 * lock held by another process instead of failing with SQLITE_BUSY, and applies the committed
 * migrations. The busy timeout is set first: switching a new file to WAL takes a lock that a
 * process starting at the same moment may hold.
 */
function openSqlite(path: string): Db {
  const sqlite = openSqliteFile(path, (opened) => {
    opened.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    useWal(opened);
    opened.pragma("synchronous = NORMAL");
    opened.pragma("foreign_keys = ON");
    migrateSqliteFile(opened);
  });
  const db = drizzleSqlite(sqlite, { schema }) as SqliteDb;
  return {
    dialect: "sqlite",
    orm: db,
    t: schema,
    sqlite: db,
    ready: async () => {},
    close: async () => {
      sqlite.close();
    },
  };
}

const BUSY_TIMEOUT_MS = 5_000;

/**
 * Switches the file to WAL (a lasting property of the file: later opens find it set). SQLite
 * answers SQLITE_BUSY at once, without its busy handler, when another process holds a lock during
 * the switch, as one opening the same new file at the same moment does; so this tries again,
 * for as long as the busy timeout, before it gives up.
 */
function useWal(sqlite: BetterSqlite3.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      sqlite.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== "SQLITE_BUSY" || Date.now() > deadline) throw error;
      // Synchronous like the rest of the opening; the other process needs milliseconds.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
  }
}

/**
 * Applies the committed migrations that this file lacks, safely when any number of processes
 * open it at once (web and worker sharing a volume, several web processes): everything, from
 * reading which migrations are applied to recording the new ones, happens inside one
 * `BEGIN IMMEDIATE` transaction, so one process migrates while the others wait on the busy
 * timeout and then find nothing left to do. Postgres gets the same guarantee from its advisory
 * lock.
 *
 * drizzle's own SQLite migrator reads the applied migrations before its transaction begins (a
 * plain, deferred `BEGIN`), so two processes could both decide to create the same table. This
 * keeps drizzle's files (`readMigrationFiles`) and its bookkeeping table exactly, so databases
 * migrated by either one stay compatible.
 */
export function migrateSqliteFile(sqlite: BetterSqlite3.Database): void {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS });
  const apply = sqlite.transaction(() => {
    sqlite.exec(`CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (
      id SERIAL PRIMARY KEY,
      hash text NOT NULL,
      created_at numeric
    )`);
    const last = sqlite
      .prepare(`SELECT created_at FROM "__drizzle_migrations" ORDER BY created_at DESC LIMIT 1`)
      .get() as { created_at: number | string } | undefined;
    const record = sqlite.prepare(
      `INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)`,
    );
    for (const migration of migrations) {
      if (last && Number(last.created_at) >= migration.folderMillis) continue;
      for (const statement of migration.sql) {
        if (statement.trim() !== "") sqlite.exec(statement);
      }
      record.run(migration.hash, migration.folderMillis);
    }
  });
  apply.immediate();
}

/** BIGINT (provider IDs, counts) as a JavaScript number: every ID the provider hands out fits. */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * Whether a query's failure took its connection with it, so that the connection must not go
 * back to the pool: a failure of the socket (no SQLSTATE), or one the server ends the session
 * with (severity FATAL or PANIC: a shutdown, a restart, pg_terminate_backend), which it sends
 * just before it closes the socket. Any other failure (a constraint, a statement timeout) leaves
 * the connection usable.
 */
export function connectionLost(error: unknown): boolean {
  const e = error as { code?: unknown; severity?: unknown };
  return typeof e?.code !== "string" || e.severity === "FATAL" || e.severity === "PANIC";
}

/** Runs a query outside a transaction (see `turnBatched`). */
export interface TurnQueries {
  query(config: pg.QueryConfig): Promise<pg.QueryResult>;
}

/**
 * Queries outside a transaction asked for in one turn of the event loop (the shops, order states
 * and intents of the sync jobs whose answers arrived together) share one pooled connection and
 * leave in one socket write, where each took a connection of its own and a round trip: a sync
 * job paid three. The pool's connections are in pipeline mode (`openPostgres`), and each query
 * ends in its own Sync, so one that fails fails alone. Each answer is given as it arrives;
 * Postgres answers a connection's queries in order, so a slow one holds back those behind it in
 * its turn. The link store's queries outside a transaction are keyed lookups and single-row
 * writes, but for the select of a shop's orders when its links are retired (rare: after the
 * shop's provider store changes), and the statement timeout bounds any of them.
 */
function turnBatched(pool: pg.Pool): TurnQueries {
  type Queued = {
    config: pg.QueryConfig;
    resolve: (result: pg.QueryResult) => void;
    reject: (error: unknown) => void;
  };
  let queue: Queued[] = [];
  const flush = async () => {
    const batch = queue;
    queue = [];
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      for (const queued of batch) queued.reject(error);
      return;
    }
    // A connection that a failure took with it must not go back to the pool.
    let broken: Error | undefined;
    const socket = (client as pg.PoolClient & { connection: pg.Connection }).connection.stream;
    socket.cork();
    const answers = batch.map((queued) =>
      client.query(queued.config).then(queued.resolve, (error: Error) => {
        if (connectionLost(error)) broken = error;
        queued.reject(error);
      }),
    );
    socket.uncork();
    await Promise.all(answers);
    client.release(broken);
  };
  const query = (config: pg.QueryConfig) =>
    new Promise<pg.QueryResult>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ config, resolve, reject });
    });
  return { query };
}

/**
 * The pool's connections, for a running process that tells the operator when it loses Postgres
 * and when it has it back: one warning line at the first connection that fails once one had
 * worked (a restart, a failover, the network; it names DATABASE_URL, the cause and the fix),
 * one line at the first that connects again. In between, the queries fail, and their jobs are
 * retried with their own lines. Before any connection worked, `waitForDatabase` speaks.
 */
function watched(where: string, logger: Logger): typeof pg.Client {
  const outage = outageLines(logger, {
    variable: "DATABASE_URL",
    where,
    meanwhile: "the jobs that need it fail and are retried until it is back",
    fix: "start Postgres or check DATABASE_URL",
  });
  let up = false;
  const lost = (error: Error & { code?: string; severity?: string }) => {
    if (!up) return;
    // The server's own words when it said why (a shutdown, an administrator), else the socket's.
    outage.lost(error.severity ? error.message : (error.code ?? error.message));
  };
  const connected = () => {
    up = true;
    outage.back();
  };
  return class WatchedClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      // A connection that worked and ends without being asked to (see openPostgres).
      this.on("error", lost);
    }
    // The pool connects its clients with a callback.
    override connect(): Promise<pg.Client>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<pg.Client> | undefined {
      if (!callback) {
        return super.connect().then(
          (client) => {
            connected();
            return client;
          },
          (error: Error) => {
            lost(error);
            throw error;
          },
        );
      }
      super.connect((error: Error) => {
        if (error) lost(error);
        else connected();
        callback(error);
      });
    }
  };
}

/**
 * node-postgres checks the server's certificate and host name for `sslmode=prefer`, `require` and
 * `verify-ca` as for `verify-full`, and says so at every start in an eight-line warning: pg 9 will
 * take them as libpq does, `require` then encrypting without checking. The connector keeps the
 * checked meaning, which docs/configuration.md gives, under any pg, and says it as `verify-full`
 * (the warning's own fix). With `uselibpqcompat=true` the URL asks for libpq's meanings: as given.
 */
export function checkedSslMode(url: string): string {
  if (/[?&]uselibpqcompat=true(&|$)/.test(url)) return url;
  return url.replace(/([?&]sslmode=)(prefer|require|verify-ca)(?=&|#|$)/, "$1verify-full");
}

/** Every process may start at once: the first takes this lock and migrates, the others wait. */
const MIGRATION_LOCK = 7_413_220_021;

function openPostgres(url: string, options: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: checkedSslMode(url),
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    types,
    // A query goes out as soon as it is asked for, behind those still in flight on the
    // connection (node-postgres's pipeline mode): the link store's write transactions send the
    // statements whose answers they do not need without waiting (link-repository-pg.ts). Each
    // query still ends in its own Sync, so outside a transaction one failing fails alone.
    pipeline: true,
    ...(options.logger ? { Client: watched(redactedUrl(url), options.logger) } : {}),
  });
  // A connection dropped by the server (a restart, a failover, an administrator) fails the
  // queries in flight on it, and the pool discards it. node-postgres also emits the error on
  // the client, and on the pool while the client is idle: with no listener there, the process
  // would crash. The pool listens only while a client is idle, so every client gets a listener
  // of its own when it connects, for the time it is checked out (a turn's queries, a
  // transaction).
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  const db = drizzlePg(pool, { schema: pgSchema }) as PgDb;
  let migrated: Promise<void> | undefined;
  const migrate = async () => {
    const client = await pool.connect();
    try {
      await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
      await migratePg(drizzlePg(client), { migrationsFolder: join(MIGRATIONS, "postgres") });
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
      client.release();
    }
  };
  return {
    dialect: "postgres",
    url,
    orm: db as unknown as SqliteDb,
    t: pgSchema as unknown as typeof schema,
    pg: db,
    turn: turnBatched(pool),
    ready() {
      migrated ??= migrate().catch((error) => {
        migrated = undefined;
        throw error;
      });
      return migrated;
    },
    async close() {
      await pool.end();
    },
  };
}

/**
 * Runs writes as one transaction on either engine: better-sqlite3's (synchronous, BEGIN
 * IMMEDIATE) or a Postgres one. `build` returns the statements, built on the transaction.
 */
export async function writeTogether(
  db: Db,
  build: (tx: SqliteDb) => { run(): unknown }[],
): Promise<void> {
  if (db.dialect === "sqlite") {
    db.sqlite.transaction(
      (tx) => {
        for (const statement of build(tx as unknown as SqliteDb)) statement.run();
      },
      { behavior: "immediate" },
    );
    return;
  }
  await db.pg.transaction(async (tx) => {
    for (const statement of build(tx as unknown as SqliteDb)) {
      await (statement as unknown as PromiseLike<unknown>);
    }
  });
}

/** Whether the database answers (the readiness check). */
export async function reachable(db: Db): Promise<boolean> {
  try {
    if (db.dialect === "sqlite") {
      return db.sqlite.$client.prepare("select 1 as ok").get() !== undefined;
    }
    await db.pg.execute(sql`select 1`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Waits until the database answers and its migrations are applied, trying again with a growing
 * pause (0.5 s doubling to 15 s) and one warning line per attempt that names DATABASE_URL; with
 * `giveUpAfterMs` it then stops with one line. SQLite answers at once.
 */
export async function waitForDatabase(
  db: Db,
  options: { logger: Logger; giveUpAfterMs?: number },
): Promise<void> {
  if (db.dialect === "sqlite") return;
  const service = {
    variable: "DATABASE_URL",
    where: redactedUrl(db.url),
    startFix: "start Postgres or point DATABASE_URL at it",
  };
  await waitUntilReachable(
    service,
    () =>
      db.ready().then(
        () => null,
        (thrown: NodeJS.ErrnoException) => {
          // drizzle wraps a failed migration statement's error ("Failed query: …") around
          // Postgres's own, which names the cause.
          const error = (thrown.cause as NodeJS.ErrnoException | undefined) ?? thrown;
          const refused = refusal(error, db.url);
          if (refused) throw new ConfigError(`DATABASE_URL ${service.where}: ${refused}`);
          // A socket's errno (ECONNREFUSED) says it all; a server's SQLSTATE (57P03) needs its words.
          return error.code && /^E[A-Z]+$/.test(error.code) ? error.code : error.message;
        },
      ),
    options,
  );
}

/**
 * The answer no wait changes, with its fix, or undefined for one that a wait may (an outage):
 * Postgres's refusals (REFUSALS; a user taken only over TLS, from a URL without sslmode), pg's own
 * when the server asks for a password the URL does not give, and TLS that DATABASE_URL asks for
 * (sslmode) and cannot be had as it stands (a certificate file it cannot read among them).
 */
function refusal(error: NodeJS.ErrnoException, url: string): string | undefined {
  // A server that takes the user only over TLS (a managed Postgres) finds no pg_hba.conf line for
  // a connection in the clear: its message ends "no encryption".
  if (error.code === "28000" && /no encryption$/.test(error.message) && !sslModeOf(url)) {
    return `${error.message} (28000); add sslmode=require to DATABASE_URL if the server takes the user only over TLS (a managed Postgres's usual rule), or let it connect in the server's pg_hba.conf`;
  }
  const refused = REFUSALS[error.code ?? ""];
  if (refused) return `${error.message} (${error.code}); ${refused}`;
  // node-postgres reads sslrootcert, sslcert and sslkey as it connects: a path it cannot read
  // fails every attempt alike.
  const file = error.syscall === "open" ? sslFileParameter(url, error.path) : undefined;
  if (file) {
    return `${file}=${error.path} cannot be read (${error.code}); give the path of a PEM file this user may read`;
  }
  if (/password must be a (non-empty )?string/i.test(error.message)) {
    const user = userOf(url);
    return `the server asks ${user ? `user "${user}"` : "its user"} for a password and DATABASE_URL has none; ${REFUSALS["28P01"]}`;
  }
  if (/does not support SSL/i.test(error.message)) {
    return "the server does not support TLS and DATABASE_URL asks for it (sslmode); turn TLS on in the server, or take sslmode out of DATABASE_URL";
  }
  return certificateRefusal(error, "DATABASE_URL", {
    trust: "give its CA in DATABASE_URL (sslrootcert=/path/to/ca.pem)",
    skip: "sslmode=no-verify to encrypt without checking it",
  });
}

/** The TLS file parameter of DATABASE_URL (sslrootcert, sslcert, sslkey) that names `path`. */
function sslFileParameter(url: string, path: string | undefined): string | undefined {
  try {
    const parameters = new URL(url).searchParams;
    return ["sslrootcert", "sslcert", "sslkey"].find(
      (name) => path && parameters.get(name) === path,
    );
  } catch {
    return undefined;
  }
}

function userOf(connectionString: string): string {
  try {
    return decodeURIComponent(new URL(connectionString).username);
  } catch {
    return "";
  }
}

/**
 * Postgres's answers that no wait changes (SQLSTATE class 28, a database that does not exist, a
 * user that may not create the connector's tables): the server is up and says no, so the
 * start-up stops at once with the fix.
 */
const REFUSALS: Record<string, string> = {
  "28P01": "put the user's password in DATABASE_URL, postgres://USER:PASSWORD@host/db",
  "28000": "fix the user in DATABASE_URL, or let it connect in the server's pg_hba.conf",
  "3D000": "create the database (createdb NAME), or fix its name in DATABASE_URL",
  // The migrations create the connector's schema and tables.
  "42501":
    "let the user in DATABASE_URL create schemas and tables in the database (GRANT CREATE ON DATABASE …, and on Postgres 15 or newer GRANT CREATE ON SCHEMA public …), or connect as the database's owner",
};

/**
 * A running CLI command's question to its Postgres (`whileAnswering`), or null for SQLite, which
 * cannot stop answering: `select 1` on a connection of its own, so that the command's own long
 * queries or a busy pool are not taken for a lost server. A connection that fails is replaced at
 * the next question.
 */
export function databaseHeartbeat(db: Db): Heartbeat | null {
  if (db.dialect === "sqlite") return null;
  let client: pg.Client | undefined;
  // Whether the last question was answered: then the connection is closed politely.
  let answered = false;
  const drop = () => {
    // Not end(): a stopped server never answers its goodbye. The socket is closed at once.
    (
      client as unknown as { connection?: { stream?: { destroy(): void } } } | undefined
    )?.connection?.stream?.destroy();
    client = undefined;
  };
  return {
    variable: "DATABASE_URL",
    where: redactedUrl(db.url),
    fix: "start Postgres or check DATABASE_URL",
    async ping() {
      answered = false;
      try {
        if (!client) {
          client = new pg.Client({
            connectionString: checkedSslMode(db.url),
            connectionTimeoutMillis: 5_000,
          });
          client.on("error", () => {});
          await client.connect();
        }
        await client.query("select 1");
        answered = true;
      } catch (error) {
        drop();
        // node-pg's words for a connection that got no answer within connectionTimeoutMillis.
        if ((error as Error).message === "timeout expired") {
          throw new Error("no answer within 5 s");
        }
        throw error;
      }
    },
    dispose() {
      if (client && answered) client.end().catch(() => {});
      else drop();
    },
  };
}
