import type { Redis, Result } from "ioredis";
import type { SourceFulfillment, SourceOrder } from "../sync/source-order.ts";
import { snapshotKey } from "./names.ts";

/**
 * The latest known state of each order (DESIGN.md: "snapshot store"). A webhook is a hint that an
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

const PUT_ORDER = `
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
return stored
`;

const PUT_FULFILLMENT = `
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
return stored
`;

/** What a snapshot write did: kept the newer state, met the same version, or met a newer one. */
export type PutOutcome = "stored" | "same" | "older";
const putOutcome = (code: number): PutOutcome =>
  code === 1 ? "stored" : code === 2 ? "same" : "older";

const PUT_HINT = `
local current = tonumber(redis.call('HGET', KEYS[1], 'h') or '-1')
if tonumber(ARGV[1]) > current then redis.call('HSET', KEYS[1], 'h', ARGV[1]) end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'lv', ARGV[3]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

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
      redis.defineCommand("snapshotPutOrder", { numberOfKeys: 1, lua: PUT_ORDER });
      redis.defineCommand("snapshotPutFulfillment", { numberOfKeys: 1, lua: PUT_FULFILLMENT });
      redis.defineCommand("snapshotPutHint", { numberOfKeys: 1, lua: PUT_HINT });
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
   * stored the snapshot and failed before its job was queued.
   */
  async storeOrder(order: SourceOrder, options: { live?: boolean } = {}): Promise<PutOutcome> {
    const stored = await this.#redis.snapshotPutOrder(
      this.key(order.shop, order.id),
      JSON.stringify(order),
      versionOf(order.updatedAt),
      this.#ttlMs,
      options.live ? String(Date.now()) : "",
    );
    return putOutcome(stored);
  }

  async putFulfillment(
    shop: string,
    fulfillment: SourceFulfillment,
    options: { live?: boolean } = {},
  ): Promise<boolean> {
    return (await this.storeFulfillment(shop, fulfillment, options)) === "stored";
  }

  /** Like `putFulfillment`, with the outcome of `storeOrder`. */
  async storeFulfillment(
    shop: string,
    fulfillment: SourceFulfillment,
    options: { live?: boolean } = {},
  ): Promise<PutOutcome> {
    const stored = await this.#redis.snapshotPutFulfillment(
      this.key(shop, fulfillment.orderId),
      fulfillment.id,
      JSON.stringify(fulfillment),
      versionOf(fulfillment.updatedAt),
      this.#ttlMs,
      options.live ? String(Date.now()) : "",
    );
    return putOutcome(stored);
  }

  /** Records that the order changed in a way the payload did not fully describe. */
  async putHint(shop: string, orderId: string, atMs: number, options: { live?: boolean } = {}) {
    await this.#redis.snapshotPutHint(
      this.key(shop, orderId),
      atMs,
      this.#ttlMs,
      options.live ? String(Date.now()) : "",
    );
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
