import { createHash } from "node:crypto";
import type { Result } from "ioredis";
import { defineScripts, loadLua } from "../lib/lua.ts";
import { deleteKeys, type RedisConnection, scanKeys } from "../lib/redis-keys.ts";
import { snapshotKey } from "../queue/names.ts";
import type { SourceFulfillment, SourceOrder } from "../sync/source-order.ts";

/**
 * The latest known state of each order (docs/principles.md, principle 1). A webhook is a hint that an
 * order changed; the sync job reads the snapshot when it runs, so duplicates, reordering and
 * replays all collapse into "reconcile this order".
 *
 * One Redis hash per order:
 *   o / ov        the whole order (SourceOrder JSON) and its version (updated_at, epoch ms)
 *   f:<id> / fv:<id>  a fulfillment from a fulfillments/* webhook and its version
 *   h             newest "order changed, payload incomplete" hint (orders/edited, refunds)
 *   lv            when a live event last touched the order (for priority and lag metrics)
 *   m             the receiver's dedupe marks of the deliveries about the order (72 hours each)
 *   x             when the hash expires (its expiry is renewed once less than half is left)
 *   j             the stamp of the order's last job id made by the receiver
 * Every write is one script call (lua/snapshot-write.lua): it keeps a part only when strictly
 * newer, so an older delivery arriving late can never overwrite a newer state.
 */

/** The receiver's dedupe mark was already there: nothing was written (see lua/). */
const DUPLICATE = 3;

/** The snapshot scripts (`lua/`): the newer-only write (a versioned part or a hint), the mark. */
const dir = new URL("./lua/", import.meta.url);
export const SNAPSHOT_WRITE_LUA = loadLua(dir, "snapshot-write-1");
const SNAPSHOT_SCRIPTS = {
  snapshotWrite: SNAPSHOT_WRITE_LUA,
  snapshotMark: loadLua(dir, "snapshot-mark-1"),
};

/** What a snapshot write did: kept the newer state, met the same version, or met a newer one. */
export type PutOutcome = "stored" | "same" | "older";
/** What the receiver's write did: a `PutOutcome`, or nothing because the event was seen before. */
export type ReceiveOutcome = PutOutcome | "duplicate";
export const putOutcome = (code: number): ReceiveOutcome =>
  code === 1 ? "stored" : code === 2 ? "same" : code === DUPLICATE ? "duplicate" : "older";

/** One newer-only write of an order's snapshot: a versioned part, or a hint. */
export type SnapshotWrite =
  | {
      kind: "part";
      key: string;
      field: string;
      versionField: string;
      json: string;
      version: number;
    }
  | { kind: "hint"; key: string; atMs: number };

/** The receiver's dedupe mark for an event about no order: Redis key and how long it is kept. */
export interface SeenMark {
  key: string;
  ttlSeconds: number;
}

/**
 * The receiver's dedupe mark for an event about an order, kept in the order's snapshot hash
 * (field m, lua/snapshot-write.lua): its id and how long it is kept.
 */
export interface OrderMark {
  id: string;
  ttlSeconds: number;
}

/**
 * A delivery's mark id: 16 hex digits of a hash of its topic and event id (the event id is
 * shared across topics, so it only names a delivery together with the topic). Of fixed length
 * and form, whatever the unsigned header held.
 */
export const orderMarkId = (topic: string, eventId: string): string =>
  createHash("sha1").update(`${topic}\n${eventId}`).digest("hex").slice(0, 16);

interface WriteOptions {
  /** Records when a live event last touched the order. */
  live?: boolean;
  /** Checks this mark first (see above); the outcome may then be "duplicate". */
  seen?: OrderMark;
}

/** The arguments of lua/snapshot-write.lua after its key, in its header's order. */
export function snapshotWriteArgs(
  write: SnapshotWrite,
  options: {
    ttlMs: number;
    liveAt: number | "";
    now: number;
    seen: OrderMark | null | undefined;
    markAlways: boolean;
    stamp: boolean;
  },
): (string | number)[] {
  const part =
    write.kind === "part"
      ? [write.field, write.versionField, write.json, write.version]
      : ["", "", "", write.atMs];
  return [
    ...part,
    options.ttlMs,
    options.liveAt,
    options.now,
    options.seen?.id ?? "",
    options.seen?.ttlSeconds ?? 0,
    options.markAlways ? "1" : "",
    options.stamp ? "1" : "",
  ];
}

declare module "ioredis" {
  interface RedisCommander<Context> {
    snapshotWrite(
      snapshot: string,
      ...args: (string | number)[]
    ): Result<number | [number, number], Context>;
    snapshotMark(
      snapshot: string,
      mark: string,
      ttlSeconds: number,
      now: number,
    ): Result<number, Context>;
  }
}

export interface OrderSnapshot {
  /** The whole order with every fulfillment merged in (newest version of each wins). */
  order: SourceOrder | null;
  /** Fulfillments known only from fulfillment webhooks (no order payload seen yet). */
  orphanFulfillments: SourceFulfillment[];
  orderVersion: number | null;
  /** Set when an incomplete event (edit, refund) is newer than the stored order. */
  staleSince: number | null;
  liveAt: number | null;
}

export interface SnapshotStoreOptions {
  prefix: string;
  /** How long a snapshot is kept after its last write; reconciliation refetches older ones. */
  ttlMs?: number;
}

/** Versions compare as epoch milliseconds; an unparsable updated_at cannot be ordered. */
export function versionOf(updatedAt: string): number {
  const ms = Date.parse(updatedAt);
  if (Number.isNaN(ms)) throw new Error(`unparsable updated_at: ${updatedAt}`);
  return ms;
}

export class SnapshotStore {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #ttlMs: number;

  constructor(redis: RedisConnection, options: SnapshotStoreOptions) {
    this.#redis = redis;
    this.#prefix = options.prefix;
    this.#ttlMs = options.ttlMs ?? 14 * 24 * 3600_000;
    defineScripts(redis, SNAPSHOT_SCRIPTS);
  }

  key(shop: string, orderId: string): string {
    return snapshotKey(this.#prefix, shop, orderId);
  }

  /** How long a snapshot is kept after its last write. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** The newer-only write of a whole order (fields o / ov). */
  orderWrite(order: SourceOrder): SnapshotWrite {
    return {
      kind: "part",
      key: this.key(order.shop, order.id),
      field: "o",
      versionField: "ov",
      json: JSON.stringify(order),
      version: versionOf(order.updatedAt),
    };
  }

  /** The newer-only write of a fulfillment from a fulfillments/* webhook (f:<id> / fv:<id>). */
  fulfillmentWrite(shop: string, fulfillment: SourceFulfillment): SnapshotWrite {
    const { id } = fulfillment;
    return {
      kind: "part",
      key: this.key(shop, fulfillment.orderId),
      field: `f:${id}`,
      versionField: `fv:${id}`,
      json: JSON.stringify(fulfillment),
      version: versionOf(fulfillment.updatedAt),
    };
  }

  /** A hint that the order changed at `atMs` in a way its payload did not fully describe. */
  hintWrite(shop: string, orderId: string, atMs: number): SnapshotWrite {
    return { kind: "hint", key: this.key(shop, orderId), atMs };
  }

  /**
   * Stores the order when it is newer than what is kept: "stored", "older" (a newer one is kept)
   * or "same" (that version is already held). The receiver queues a job for "same", because an
   * earlier attempt of that delivery may have stored the snapshot and failed before its job was
   * queued. With `seen`, "duplicate" when the event's mark is there (nothing written), and an
   * "older" delivery is marked in the same call.
   */
  async storeOrder(order: SourceOrder, options: WriteOptions = {}): Promise<ReceiveOutcome> {
    return this.write(this.orderWrite(order), options);
  }

  /** A fulfillment from a fulfillments/* webhook, as `storeOrder` stores an order. */
  async storeFulfillment(
    shop: string,
    fulfillment: SourceFulfillment,
    options: WriteOptions = {},
  ): Promise<ReceiveOutcome> {
    return this.write(this.fulfillmentWrite(shop, fulfillment), options);
  }

  /**
   * Records that the order changed in a way the payload did not fully describe: "stored", or
   * with `seen`, "duplicate" when the event's mark is there (nothing written then).
   */
  async putHint(
    shop: string,
    orderId: string,
    atMs: number,
    options: WriteOptions = {},
  ): Promise<"stored" | "duplicate"> {
    const outcome = await this.write(this.hintWrite(shop, orderId, atMs), options);
    return outcome === "duplicate" ? "duplicate" : "stored";
  }

  /** One write (lua/snapshot-write.lua). */
  async write(write: SnapshotWrite, options: WriteOptions = {}): Promise<ReceiveOutcome> {
    // Without the stamp the answer is the code alone.
    return putOutcome((await this.#write(write, options, false)) as number);
  }

  /**
   * One write that takes the order's next job stamp when it needs a job (see
   * lua/snapshot-write.lua): the receiver's first call on a Redis Cluster.
   */
  async writeForJob(
    write: SnapshotWrite,
    options: WriteOptions = {},
  ): Promise<{ outcome: ReceiveOutcome; stamp: number | null }> {
    const answer = await this.#write(write, options, true);
    return Array.isArray(answer)
      ? { outcome: putOutcome(answer[0]), stamp: answer[1] }
      : { outcome: putOutcome(answer), stamp: null };
  }

  #write(write: SnapshotWrite, options: WriteOptions, stamp: boolean) {
    const now = Date.now();
    return this.#redis.snapshotWrite(
      write.key,
      ...snapshotWriteArgs(write, {
        ttlMs: this.#ttlMs,
        liveAt: options.live ? now : "",
        now,
        seen: options.seen,
        markAlways: false,
        stamp,
      }),
    );
  }

  /**
   * Marks a delivery about this order once its job is queued (lua/snapshot-mark.lua): false when
   * the snapshot is gone (the mark is then not kept; a redelivery is processed again).
   */
  async mark(key: string, seen: OrderMark): Promise<boolean> {
    return (await this.#redis.snapshotMark(key, seen.id, seen.ttlSeconds, Date.now())) === 1;
  }

  async get(shop: string, orderId: string): Promise<OrderSnapshot | null> {
    const hash = await this.#redis.hgetall(this.key(shop, orderId));
    if (Object.keys(hash).length === 0) return null;
    return parseSnapshot(hash);
  }

  /** Removes the stored state of these orders (privacy redaction, shop removal). */
  async delete(shop: string, orderIds: string[]): Promise<number> {
    return deleteKeys(
      this.#redis,
      orderIds.map((id) => this.key(shop, id)),
    );
  }

  /**
   * customers/redact: deletes the snapshots of the orders named and of any other order of the
   * shop whose stored customer is this one (Shopify's list can miss orders we still hold).
   */
  async deleteCustomer(
    shop: string,
    who: { orderIds: readonly string[]; customerId: string | null },
  ): Promise<number> {
    const keys = new Set(who.orderIds.map((id) => this.key(shop, id)));
    if (who.customerId) {
      for await (const batch of scanKeys(this.#redis, `${this.#prefix}:snap:{${shop}:*`)) {
        for (const key of batch) {
          const json = await this.#redis.hget(key, "o");
          if (!json) continue;
          const order = JSON.parse(json) as SourceOrder;
          if (order.customer?.id === who.customerId) keys.add(key);
        }
      }
    }
    return deleteKeys(this.#redis, [...keys]);
  }

  /** Deletes every snapshot of a shop (uninstall clean-up, shop/redact). */
  async deleteShop(shop: string): Promise<number> {
    let removed = 0;
    for await (const keys of scanKeys(this.#redis, `${this.#prefix}:snap:{${shop}:*`)) {
      removed += await deleteKeys(this.#redis, keys);
    }
    return removed;
  }
}

function parseSnapshot(hash: Record<string, string>): OrderSnapshot {
  const order = hash.o ? (JSON.parse(hash.o) as SourceOrder) : null;
  const orderVersion = hash.ov ? Number(hash.ov) : null;
  const extra: SourceFulfillment[] = [];
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith("f:")) extra.push(JSON.parse(value) as SourceFulfillment);
  }
  let orphanFulfillments: SourceFulfillment[] = [];
  if (order) {
    order.fulfillments = mergeFulfillments(order.fulfillments, extra);
  } else {
    orphanFulfillments = extra;
  }
  const hint = hash.h ? Number(hash.h) : null;
  return {
    order,
    orphanFulfillments,
    orderVersion,
    staleSince: hint !== null && (orderVersion === null || hint > orderVersion) ? hint : null,
    liveAt: hash.lv ? Number(hash.lv) : null,
  };
}

/** The newest version of each fulfillment, whichever payload carried it. */
export function mergeFulfillments(
  fromOrder: SourceFulfillment[],
  fromEvents: SourceFulfillment[],
): SourceFulfillment[] {
  const byId = new Map<string, SourceFulfillment>();
  for (const f of [...fromOrder, ...fromEvents]) {
    const known = byId.get(f.id);
    if (!known || versionOf(f.updatedAt) > versionOf(known.updatedAt)) byId.set(f.id, f);
  }
  return [...byId.values()].sort((a, b) => versionOf(a.createdAt) - versionOf(b.createdAt));
}
