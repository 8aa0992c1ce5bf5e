import type { Db } from "./database.ts";
import type { LinkQueries } from "./link-queries.ts";
import { PgLinkRepository } from "./link-repository-pg.ts";
import { SqliteLinkRepository } from "./link-repository-sqlite.ts";

export type { IntentRow, LinkSpace, SyncedCheck } from "./link-queries.ts";

/** The link store's interface, whichever engine holds it. */
export type LinkRepository = {
  [K in keyof LinkQueries]: LinkQueries[K];
};

/** The link repository of the store's engine. */
export function createLinkRepository(db: Db): LinkRepository {
  return db.dialect === "sqlite" ? new SqliteLinkRepository(db) : new PgLinkRepository(db);
}
