import { Session } from "@shopify/shopify-api";
import type { SessionStorage } from "@shopify/shopify-app-session-storage";
import {
  DrizzleSessionStoragePostgres,
  DrizzleSessionStorageSQLite,
} from "@shopify/shopify-app-session-storage-drizzle";
import { type SecretBox, sealedFor } from "../../lib/secret-box.ts";
import type { Db } from "../../store/index.ts";

/**
 * Shopify's drizzle session storage with the tokens sealed at rest (ADR 0004).
 *
 * The library writes `accessToken` and `refreshToken` as they are; this wrapper hands it a copy
 * of the session whose tokens are sealed with AES-256-GCM and opens them again on load, so the
 * database never holds a usable token and everything else (the table, the queries, the
 * row mapping) stays the library's.
 */
export class SealedSessionStorage implements SessionStorage {
  readonly #inner: SessionStorage;
  readonly #box: SecretBox;

  constructor(db: Db, box: SecretBox) {
    // The package's typings resolve drizzle-orm's CommonJS declarations and ours the ESM ones:
    // the same classes at run time, two declarations for tsc (a dual-package type hazard).
    // On Postgres, the library's Postgres adapter on the same database (`schema-pg.ts`'s table).
    type SqliteArgs = ConstructorParameters<typeof DrizzleSessionStorageSQLite>;
    type PgArgs = ConstructorParameters<typeof DrizzleSessionStoragePostgres>;
    this.#inner =
      db.dialect === "sqlite"
        ? new DrizzleSessionStorageSQLite(
            db.sqlite as unknown as SqliteArgs[0],
            db.t.session as unknown as SqliteArgs[1],
          )
        : new DrizzleSessionStoragePostgres(
            db.pg as unknown as PgArgs[0],
            db.t.session as unknown as PgArgs[1],
          );
    this.#box = box;
  }

  storeSession(session: Session): Promise<boolean> {
    return this.#inner.storeSession(
      this.#transform(session, (v, field) =>
        this.#box.seal(v, sealedFor.session(field, session.id)),
      ),
    );
  }

  async loadSession(id: string): Promise<Session | undefined> {
    const stored = await this.#inner.loadSession(id);
    return stored ? this.#opened(stored) : undefined;
  }

  deleteSession(id: string): Promise<boolean> {
    return this.#inner.deleteSession(id);
  }

  deleteSessions(ids: string[]): Promise<boolean> {
    return this.#inner.deleteSessions(ids);
  }

  async findSessionsByShop(shop: string): Promise<Session[]> {
    const sessions = await this.#inner.findSessionsByShop(shop);
    return sessions.map((s) => this.#opened(s));
  }

  /** Deletes every session of a shop (uninstall, shop/redact). */
  async deleteShopSessions(shop: string): Promise<void> {
    const sessions = await this.#inner.findSessionsByShop(shop);
    if (sessions.length > 0) await this.#inner.deleteSessions(sessions.map((s) => s.id));
  }

  #opened(session: Session): Session {
    return this.#transform(session, (v, field) =>
      this.#box.open(v, sealedFor.session(field, session.id)),
    );
  }

  #transform(
    session: Session,
    f: (value: string, field: "accessToken" | "refreshToken") => string,
  ): Session {
    const params = session.toObject();
    return new Session({
      ...params,
      ...(params.accessToken ? { accessToken: f(params.accessToken, "accessToken") } : {}),
      ...(params.refreshToken ? { refreshToken: f(params.refreshToken, "refreshToken") } : {}),
    });
  }
}
