import type { Redis, Result } from "ioredis";
import type { SourceFulfillment, SourceOrder } from "../sync/source-order.ts";
import { snapshotKey } from "./names.ts";

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
 * Every write is one script call: it keeps a part only when strictly newer, so an older
 * delivery arriving late can never overwrite a newer state.
 */

/**
 * The receiver's variant of each write (`seen` given) also takes the event's dedupe mark as
 * KEYS[2]: a mark already there answers 3 ("duplicate") before anything is written, and an older
 * delivery, which needs no job, gets its mark in the same call. A delivery that needs a job is
 * marked by the receiver only after the job is queued (docs/principles.md, principle 6): a mark written
 * before a job that then failed would turn Shopify's retry into a "duplicate" and lose the event.
 */
const DUPLICATE = 3;
const checkSeen = (seen: boolean) =>
  seen ? `if redis.call('EXISTS', KEYS[2]) == 1 then return ${DUPLICATE} end` : "";
const markSeenIfOlder = (seen: boolean, ttlArg: number) =>
  seen ? `if stored == 0 then redis.call('SET', KEYS[2], '1', 'EX', ARGV[${ttlArg}]) end` : "";

const putOrder = (seen: boolean) => `
${checkSeen(seen)}
local current = tonumber(redis.call('HGET', KEYS[1], 'ov') or '-1')
local incoming = tonumber(ARGV[2])
local stored = 0
if incoming > current then
  redis.call('HSET', KEYS[1], 'o', ARGV[1], 'ov', ARGV[2])
  stored = 1
elseif incoming == current then
  stored = 2
end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'lv', ARGV[4]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
${markSeenIfOlder(seen, 5)}
return stored
`;

const putFulfillment = (seen: boolean) => `
${checkSeen(seen)}
local field = 'f:' .. ARGV[1]
local vfield = 'fv:' .. ARGV[1]
local current = tonumber(redis.call('HGET', KEYS[1], vfield) or '-1')
local incoming = tonumber(ARGV[3])
local stored = 0
if incoming > current then
  redis.call('HSET', KEYS[1], field, ARGV[2], vfield, ARGV[3])
  stored = 1
elseif incoming == current then
  stored = 2
end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'lv', ARGV[5]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
${markSeenIfOlder(seen, 6)}
return stored
`;

/** What a snapshot write did: kept the newer state, met the same version, or met a newer one. */
export type PutOutcome = "stored" | "same" | "older";
/** What the receiver's write did: a `PutOutcome`, or nothing because the event was seen before. */
export type ReceiveOutcome = PutOutcome | "duplicate";
const putOutcome = (code: number): ReceiveOutcome =>
  code === 1 ? "stored" : code === 2 ? "same" : code === DUPLICATE ? "duplicate" : "older";

/** A hint is always "stored": it never holds a version a job could skip. */
const putHint = (seen: boolean) => `
${checkSeen(seen)}
local current = tonumber(redis.call('HGET', KEYS[1], 'h') or '-1')
if tonumber(ARGV[1]) > current then redis.call('HSET', KEYS[1], 'h', ARGV[1]) end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'lv', ARGV[3]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** The receiver's dedupe mark for one event: Redis key and how long it is kept. */
export interface SeenMark {
  key: string;
  ttlSeconds: number;
}

interface WriteOptions {
  /** Records when a live event last touched the order. */
  live?: boolean;
  /** Checks this mark first (see above); the outcome may then be "duplicate". */
  seen?: SeenMark;
}

declare module "ioredis" {
  interface RedisCommander<Context> {
    snapshotPutOrder(
      key: string,
      json: string,
      version: number,
      ttlMs: number,
      liveAt: string,
    ): Result<number, Context>;
    snapshotPutFulfillment(
      key: string,
      id: string,
      json: string,
      version: number,
      ttlMs: number,
      liveAt: string,
    ): Result<number, Context>;
    snapshotPutHint(
      key: string,
      version: number,
      ttlMs: number,
      liveAt: string,
    ): Result<number, Context>;
    snapshotReceiveOrder(
      key: string,
      seenKey: string,
      json: string,
      version: number,
      ttlMs: number,
      liveAt: string,
      seenTtlSeconds: number,
    ): Result<number, Context>;
    snapshotReceiveFulfillment(
      key: string,
      seenKey: string,
      id: string,
      json: string,
      version: number,
      ttlMs: number,
      liveAt: string,
      seenTtlSeconds: number,
    ): Result<number, Context>;
    snapshotReceiveHint(
      key: string,
      seenKey: string,
      version: number,
      ttlMs: number,
      liveAt: string,
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
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #ttlMs: number;

  constructor(redis: Redis, options: SnapshotStoreOptions) {
    this.#redis = redis;
    this.#prefix = options.prefix;
    this.#ttlMs = options.ttlMs ?? 14 * 24 * 3600_000;
    if (typeof (redis as Partial<Redis>).snapshotPutOrder !== "function") {
      redis.defineCommand("snapshotPutOrder", { numberOfKeys: 1, lua: putOrder(false) });
      redis.defineCommand("snapshotPutFulfillment", {
        numberOfKeys: 1,
        lua: putFulfillment(false),
      });
      redis.defineCommand("snapshotPutHint", { numberOfKeys: 1, lua: putHint(false) });
      redis.defineCommand("snapshotReceiveOrder", { numberOfKeys: 2, lua: putOrder(true) });
      redis.defineCommand("snapshotReceiveFulfillment", {
        numberOfKeys: 2,
        lua: putFulfillment(true),
      });
      redis.defineCommand("snapshotReceiveHint", { numberOfKeys: 2, lua: putHint(true) });
    }
  }

  key(shop: string, orderId: string): string {
    return snapshotKey(this.#prefix, shop, orderId);
  }

  /** Stores the order when it is newer than what is kept. Returns whether it was stored. */
  async putOrder(order: SourceOrder, options: { live?: boolean } = {}): Promise<boolean> {
    return (await this.storeOrder(order, options)) === "stored";
  }

  /**
   * Like `putOrder`, and tells a delivery of the version already held ("same") from an older one:
   * the receiver queues a job for "same", because an earlier attempt of that delivery may have
   * stored the snapshot and failed before its job was queued. With `seen`, "duplicate" when the
   * event's mark is there (nothing written), and an "older" delivery is marked in the same call.
   */
  async storeOrder(order: SourceOrder, options: WriteOptions = {}): Promise<ReceiveOutcome> {
    const key = this.key(order.shop, order.id);
    const json = JSON.stringify(order);
    const version = versionOf(order.updatedAt);
    const liveAt = options.live ? String(Date.now()) : "";
    const { seen } = options;
    const code = seen
      ? await this.#redis.snapshotReceiveOrder(
          key,
          seen.key,
          json,
          version,
          this.#ttlMs,
          liveAt,
          seen.ttlSeconds,
        )
      : await this.#redis.snapshotPutOrder(key, json, version, this.#ttlMs, liveAt);
    return putOutcome(code);
  }

  async putFulfillment(
    shop: string,
    fulfillment: SourceFulfillment,
    options: { live?: boolean } = {},
  ): Promise<boolean> {
    return (await this.storeFulfillment(shop, fulfillment, options)) === "stored";
  }

  /** Like `putFulfillment`, with the outcomes of `storeOrder`. */
  async storeFulfillment(
    shop: string,
    fulfillment: SourceFulfillment,
    options: WriteOptions = {},
  ): Promise<ReceiveOutcome> {
    const key = this.key(shop, fulfillment.orderId);
    const json = JSON.stringify(fulfillment);
    const version = versionOf(fulfillment.updatedAt);
    const liveAt = options.live ? String(Date.now()) : "";
    const { seen } = options;
    const code = seen
      ? await this.#redis.snapshotReceiveFulfillment(
          key,
          seen.key,
          fulfillment.id,
          json,
          version,
          this.#ttlMs,
          liveAt,
          seen.ttlSeconds,
        )
      : await this.#redis.snapshotPutFulfillment(
          key,
          fulfillment.id,
          json,
          version,
          this.#ttlMs,
          liveAt,
        );
    return putOutcome(code);
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
    const key = this.key(shop, orderId);
    const liveAt = options.live ? String(Date.now()) : "";
    const code = options.seen
      ? await this.#redis.snapshotReceiveHint(key, options.seen.key, atMs, this.#ttlMs, liveAt)
      : await this.#redis.snapshotPutHint(key, atMs, this.#ttlMs, liveAt);
    return code === DUPLICATE ? "duplicate" : "stored";
  }

  async get(shop: string, orderId: string): Promise<OrderSnapshot | null> {
    const hash = await this.#redis.hgetall(this.key(shop, orderId));
    if (Object.keys(hash).length === 0) return null;
    return parseSnapshot(hash);
  }

  /** Removes the stored state of these orders (privacy redaction, shop removal). */
  async delete(shop: string, orderIds: string[]): Promise<number> {
    if (orderIds.length === 0) return 0;
    return this.#redis.del(...orderIds.map((id) => this.key(shop, id)));
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
      const stream = this.#redis.scanStream({
        match: `${this.#prefix}:snap:{${shop}:*`,
        count: 500,
      });
      for await (const batch of stream as AsyncIterable<string[]>) {
        for (const key of batch) {
          const json = await this.#redis.hget(key, "o");
          if (!json) continue;
          const order = JSON.parse(json) as SourceOrder;
          if (order.customer?.id === who.customerId) keys.add(key);
        }
      }
    }
    return keys.size === 0 ? 0 : this.#redis.del(...keys);
  }

  /** Deletes every snapshot of a shop (uninstall clean-up, shop/redact). */
  async deleteShop(shop: string): Promise<number> {
    let removed = 0;
    const stream = this.#redis.scanStream({ match: `${this.#prefix}:snap:{${shop}:*`, count: 500 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length > 0) removed += await this.#redis.del(...keys);
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
