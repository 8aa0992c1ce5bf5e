import type { Result } from "ioredis";
import { defineScripts, loadLua } from "../lib/lua.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { FailureCategory } from "../sync/failure.ts";
import type { DeadLetterData } from "./jobs.ts";

const SCRIPTS = {
  deadLetterIndexed: loadLua(new URL("./lua/", import.meta.url), "dead-letter-indexed-2"),
};

declare module "ioredis" {
  interface RedisCommander<Context> {
    deadLetterIndexed(
      index: string,
      writing: string,
      id: string,
      row: string,
    ): Result<number, Context>;
  }
}

/** What the reads that count or filter entries need of one, kept beside it (its reason's length). */
export interface DeadLetterRow {
  shop: string;
  category: FailureCategory;
  /** The reason in full: a filter by its text must see all of it. */
  reason: string;
}

export const rowOf = (data: DeadLetterData): DeadLetterRow => ({
  shop: data.shop,
  category: data.category,
  reason: data.reason,
});

/**
 * A row as stored: the category, a line break, the reason. The shop is the id's first part
 * (`deadLetterId`). Not JSON: a count of 100,000 entries parses every row, and splitting one
 * string costs a fraction of JSON.parse.
 */
const encode = (data: DeadLetterData) => `${data.category}\n${data.reason}`;

function decode(id: string, stored: string): DeadLetterRow | null {
  const cut = stored.indexOf("\n");
  const bar = id.indexOf("|");
  if (cut < 0 || bar < 0) return null;
  return {
    shop: id.slice(0, bar),
    category: stored.slice(0, cut) as FailureCategory,
    reason: stored.slice(cut + 1),
  };
}

/**
 * One hash tag for both keys: removing an entry's row and its mark is one MULTI, and a read of
 * both one pipeline, on a Redis Cluster too. A change of the row's shape takes a new key name.
 */
export const indexKey = (prefix: string) => `${prefix}:dlq:{dlq-index}`;
const writingKey = (prefix: string) => `${prefix}:dlq:{dlq-index}:writing`;

/** How many ids one HMGET asks for. */
const BATCH = 1_000;

/** An entry's row as a read finds it. */
export type IndexedRow =
  | { state: "row"; row: DeadLetterRow }
  /** No row (an entry recorded before the index, or a write that stopped halfway): read it in full. */
  | { state: "missing" }
  /** A write of the entry began and did not finish: its row cannot be trusted; read it in full. */
  | { state: "writing" };

/**
 * The dead-letter queue's index: each entry's row (shop, category, reason) in one Redis hash, so
 * that counting and filtering the queue reads a few hundred bytes per entry instead of every
 * entry in full (its request, response and webhook body). The queue stays the source of truth:
 * an entry exists if and only if its job does; the index only answers for the ids the queue
 * lists, and an id without a trusted row is read in full.
 *
 * A row can be trusted because of the order of writes, not their timing:
 * - a writer marks the entry (`writing`: its row goes, a count of writes in flight goes up)
 *   before it writes the job, and writes the row and takes its mark off (`written`, one script)
 *   after; a writer that dies in between leaves the mark, so the entry is read in full until it
 *   is removed, never counted from a row older than its data;
 * - a writer without the entry's lock (it could not wait for it) never takes its mark off: two
 *   writes at once may land in either order, and only a full read knows which came last;
 * - a read fills a missing row from a full read with HSETNX, only where no mark was seen: a
 *   writer that began after the read writes its own row over it, or leaves its mark;
 * - an entry removed loses its row and mark (`forget`) before its job: a remover that dies in
 *   between leaves an entry without a row, filled in by the next read. A read that fills a row
 *   in while the entry is removed can leave a row no read asks for (the queue no longer lists
 *   its id); the next count of the whole queue sweeps it (`sweep`). A write that died leaves a
 *   mark of a few bytes: an entry of that id is read in full until it is removed.
 */
export class DeadLetterIndex {
  readonly #redis: RedisConnection;
  readonly #index: string;
  readonly #writing: string;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#index = indexKey(prefix);
    this.#writing = writingKey(prefix);
  }

  /** Before an entry's job is added or its data changed. */
  async writing(id: string): Promise<void> {
    await this.#redis.multi().hdel(this.#index, id).hincrby(this.#writing, id, 1).exec();
  }

  /** After, by a writer that held the entry's lock throughout: the row of the data it wrote. */
  async written(id: string, data: DeadLetterData): Promise<void> {
    defineScripts(this.#redis, SCRIPTS);
    await this.#redis.deadLetterIndexed(this.#index, this.#writing, id, encode(data));
  }

  /** Before entries' jobs are removed. */
  async forget(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.#redis
      .multi()
      .hdel(this.#index, ...ids)
      .hdel(this.#writing, ...ids)
      .exec();
  }

  /**
   * The rows of the given ids, in their order: one pipeline, the marks (few: writes in flight
   * or that died) read whole, the rows BATCH ids an HMGET.
   */
  async read(ids: readonly string[]): Promise<IndexedRow[]> {
    const pipeline = this.#redis.pipeline().hgetall(this.#writing);
    for (let i = 0; i < ids.length; i += BATCH) {
      pipeline.hmget(this.#index, ...ids.slice(i, i + BATCH));
    }
    const replies = (await pipeline.exec()) ?? [];
    const [marks, ...batches] = replies.map(([error, value]) => {
      if (error) throw error;
      return value;
    }) as [Record<string, string>, ...(string | null)[][]];
    const rows = batches.flat();
    return ids.map((id, k): IndexedRow => {
      if (Number(marks[id] ?? 0) > 0) return { state: "writing" };
      const stored = rows[k];
      const row = stored ? decode(id, stored) : null;
      return row ? { state: "row", row } : { state: "missing" };
    });
  }

  /** A row found missing (and unmarked), from the entry read in full, unless one was written since. */
  async fill(rows: readonly { id: string; data: DeadLetterData }[]): Promise<void> {
    if (rows.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const { id, data } of rows) pipeline.hsetnx(this.#index, id, encode(data));
    await pipeline.exec();
  }

  /** How many rows the index holds (a read compares it with the rows it found, for `sweep`). */
  rowCount(): Promise<number> {
    return this.#redis.hlen(this.#index);
  }

  /**
   * Removes the rows of entries whose jobs are gone, given every id the queue holds. A row whose
   * id is not among them and whose job exists now (added since) stays; a row removed by mistake
   * would only be filled in again by the next read.
   */
  async sweep(
    queued: readonly string[],
    exists: (id: string) => Promise<boolean>,
  ): Promise<number> {
    const known = new Set(queued);
    const strays: string[] = [];
    for await (const pairs of this.#redis.hscanStream(this.#index, { count: 1_000 })) {
      // Field, value, field, value…
      const list = pairs as string[];
      for (let k = 0; k < list.length; k += 2) {
        const id = list[k] as string;
        if (!known.has(id)) strays.push(id);
      }
    }
    const gone: string[] = [];
    for (let i = 0; i < strays.length; i += 200) {
      const chunk = strays.slice(i, i + 200);
      const found = await Promise.all(chunk.map(exists));
      gone.push(...chunk.filter((_, k) => !found[k]));
    }
    for (let i = 0; i < gone.length; i += BATCH) {
      await this.#redis.hdel(this.#index, ...gone.slice(i, i + BATCH));
    }
    return gone.length;
  }
}
