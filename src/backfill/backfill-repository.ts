import { and, desc, eq, inArray } from "drizzle-orm";
import type { Db, schema } from "../store/index.ts";
import { firstCursor, type PagerCursor } from "./windowed-pager.ts";

type Backfills = typeof schema.backfills;

export type BackfillStatus = "running" | "paused" | "completed" | "failed";

export interface BackfillRecord {
  id: number;
  shop: string;
  since: string | null;
  until: string | null;
  cursor: PagerCursor;
  done: number;
  total: number | null;
  status: BackfillStatus;
  error: string | null;
  startedAt: string;
  updatedAt: string;
  completedAt: string | null;
}

type Row = Backfills["$inferSelect"];

function toRecord(row: Row): BackfillRecord {
  return {
    ...row,
    cursor: row.cursor ? (JSON.parse(row.cursor) as PagerCursor) : firstCursor(row.since),
  };
}

/**
 * Backfills in the link store: the cursor is written after every page, so a backfill resumes where it
 * stood after a restart or a crash (the page in flight is read again; reconciling makes that
 * harmless).
 */
export class BackfillRepository {
  constructor(private readonly db: Db) {}

  async create(input: {
    shop: string;
    since: string | null;
    until: string;
  }): Promise<BackfillRecord> {
    const { backfills } = this.db.t;
    const now = new Date().toISOString();
    const [row] = await this.db.orm
      .insert(backfills)
      .values({
        shop: input.shop,
        since: input.since,
        until: input.until,
        cursor: JSON.stringify(firstCursor(input.since)),
        done: 0,
        status: "running",
        startedAt: now,
        updatedAt: now,
      })
      .returning();
    return toRecord(row as Row);
  }

  async get(id: number): Promise<BackfillRecord | null> {
    const { backfills } = this.db.t;
    const [row] = await this.db.orm.select().from(backfills).where(eq(backfills.id, id));
    return row ? toRecord(row) : null;
  }

  /** The shop's backfill that has not finished, if any (one at a time per shop). */
  async active(shop: string): Promise<BackfillRecord | null> {
    const { backfills } = this.db.t;
    const [row] = await this.db.orm
      .select()
      .from(backfills)
      .where(and(eq(backfills.shop, shop), inArray(backfills.status, ["running", "paused"])))
      .orderBy(desc(backfills.id))
      .limit(1);
    return row ? toRecord(row) : null;
  }

  /** Every backfill not finished yet (running or paused), of all shops: the progress gauges. */
  async unfinished(): Promise<{ status: BackfillStatus; done: number; total: number | null }[]> {
    const { backfills } = this.db.t;
    return this.db.orm
      .select({ status: backfills.status, done: backfills.done, total: backfills.total })
      .from(backfills)
      .where(inArray(backfills.status, ["running", "paused"]));
  }

  async latest(shop: string): Promise<BackfillRecord | null> {
    const [row] = await this.list(shop, 1);
    return row ?? null;
  }

  /** Every backfill, of one shop or of all, newest first. */
  async newestFirst(shop?: string): Promise<BackfillRecord[]> {
    const { backfills } = this.db.t;
    const rows = await this.db.orm
      .select()
      .from(backfills)
      .where(shop ? eq(backfills.shop, shop) : undefined)
      .orderBy(desc(backfills.id));
    return rows.map(toRecord);
  }

  async list(shop: string, limit = 20): Promise<BackfillRecord[]> {
    const { backfills } = this.db.t;
    const rows = await this.db.orm
      .select()
      .from(backfills)
      .where(eq(backfills.shop, shop))
      .orderBy(desc(backfills.id))
      .limit(limit);
    return rows.map(toRecord);
  }

  async setTotal(id: number, total: number) {
    await this.#update(id, { total });
  }

  async saveProgress(id: number, cursor: PagerCursor, done: number) {
    await this.#update(id, { cursor: JSON.stringify(cursor), done, status: "running" });
  }

  async complete(id: number, done: number) {
    const now = new Date().toISOString();
    await this.#update(id, { done, status: "completed", completedAt: now, cursor: null });
  }

  async fail(id: number, error: string) {
    await this.#update(id, { status: "failed", error: error.slice(0, 2_000) });
  }

  async setStatus(id: number, status: BackfillStatus) {
    await this.#update(id, { status });
  }

  async #update(id: number, set: Partial<Row>) {
    const { backfills } = this.db.t;
    await this.db.orm
      .update(backfills)
      .set({ ...set, updatedAt: new Date().toISOString() })
      .where(eq(backfills.id, id));
  }
}
