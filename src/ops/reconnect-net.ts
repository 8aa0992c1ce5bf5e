import { createHash } from "node:crypto";
import type { Logger } from "pino";
import type { BackfillRepository } from "../backfill/index.ts";
import type { DeadLetters } from "../engine/dead-letters.ts";
import { releaseLock } from "../lib/lock.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { configDeadLettersKey } from "../queue/dead-letter-record.ts";
import { needsReconnect } from "../shopify/install/shop-tokens.ts";
import type { ShopRecord } from "../store/index.ts";
import { type BulkRetryQueue, reconnectFilter } from "./bulk-retry.ts";

/**
 * How many times the sweep queues a shop's reconnect job for the same waiting work (the same
 * paused backfill and the same dead letters) within RECONNECT_NET_WINDOW_MS. A job that ran
 * and left an entry (an order Shopify no longer has, whose snapshot expired) would find it
 * again at every sweep: it stays in the dead-letter queue, saying why, and is tried again the
 * next day, not every RECONCILE_INTERVAL_MS. More than once, for a job taken by a worker of
 * an older version (a rolling deploy) or failed.
 */
export const RECONNECT_NET_TIMES = 3;
export const RECONNECT_NET_WINDOW_MS = 24 * 3_600_000;

export interface ReconnectNetDeps {
  backfills: Pick<BackfillRepository, "active">;
  deadLetters: Pick<DeadLetters, "matchingIds">;
  jobs: Pick<BulkRetryQueue, "reconnected" | "reconnectInFlight">;
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
}

/** What the sweep's look at a shop's waiting work found, and did. */
export type ReconnectNetOutcome =
  | {
      queued: false;
      why:
        | "shop not usable"
        | "nothing waits"
        | "its reconnect job is queued or running"
        | `queued ${number} times today for the same work`;
    }
  | { queued: true; jobId: string; backfillId: number | null; deadLetters: number };

/** What the sweep has queued for a shop: the work's fingerprint, and how many times. */
interface Queued {
  work: string;
  times: number;
}

const queuedKey = (prefix: string, shop: string) => `${prefix}:reconnect-net:{${shop}}`;

/** The waiting work in a few bytes: the paused backfill and the entries' ids, not their data. */
function fingerprint(backfillId: number | null, ids: readonly string[]): string {
  return createHash("sha256")
    .update(`backfill=${backfillId ?? "-"}\n${[...ids].sort().join("\n")}`)
    .digest("hex")
    .slice(0, 32);
}

/**
 * The shop's dead letters of a refused token, read only while the shop has config dead letters
 * counted (configDeadLettersKey): most sweeps of most shops read nothing of the queue. A read
 * that finds none forgets the count, unless another was recorded meanwhile.
 */
async function waitingDeadLetters(deps: ReconnectNetDeps, shop: string): Promise<string[]> {
  const key = configDeadLettersKey(deps.prefix, shop);
  const counted = await deps.redis.get(key);
  if (counted === null) return [];
  const ids = await deps.deadLetters.matchingIds(reconnectFilter(shop));
  // Deleted only if unchanged (the lock release is that compare-and-delete).
  if (ids.length === 0) await releaseLock(deps.redis, key, counted);
  return ids;
}

/**
 * The safety net of a shop's reconnect, run by the shop's reconciliation sweep. What waited for
 * the shop's token (its paused backfill, the dead letters of reconnectFilter) is resumed by ONE
 * job, queued when the token comes back (the merchant opening the app, `shops add`); when that
 * job never runs (the web process could not queue it, Redis lost it, a worker of an older
 * version took it without running it), nothing else would. The sweep queues it again, through
 * the same BulkRetryQueue.reconnected, when all of these hold:
 *
 * - the shop is usable: active, with a token, and not paused for a reconnect. The caller runs
 *   this with the record the sweep read, after the sweep read Shopify with the token, so
 *   Shopify accepts it now; a shop that still needs a reconnect (or is uninstalled, or waits
 *   for its settings) is left alone: the job would only find the refusal again;
 * - something waits: a backfill paused at its cursor, or a dead letter matching
 *   reconnectFilter(shop) (read from the dead-letter index: ids and rows, no entry's body; and
 *   only while the shop has config dead letters counted, see waitingDeadLetters);
 * - no reconnect job of the shop is queued, running or waiting to go on: one that waits to
 *   start is deduplicated by reconnected() already, but one that has started is not, and a
 *   second job would go over the same entries;
 * - the same waiting work has not been queued RECONNECT_NET_TIMES times today already.
 *
 * It cannot loop on a token Shopify refuses: a retried order whose sync meets the refusal
 * again is dead-lettered again only after ShopTokens paused the shop "reconnect needed" (in the
 * composed connector every ShopifyTokenError comes from ShopTokens answering no token: a
 * refusal it paused the shop for, or a shop already paused, uninstalled or gone), and a
 * backfill that meets it pauses with the shop; the next sweep skips the shop until the
 * merchant reconnects. The limit per day bounds what a refusal cannot explain:
 * entries a job ran and left, or a job that keeps failing.
 */
export async function queueWaitingReconnect(
  deps: ReconnectNetDeps,
  shop: Pick<ShopRecord, "shop" | "status" | "accessTokenSealed" | "pausedReason">,
): Promise<ReconnectNetOutcome> {
  if (shop.status !== "active" || !shop.accessTokenSealed || needsReconnect(shop.pausedReason)) {
    return { queued: false, why: "shop not usable" };
  }
  const shopDomain = shop.shop;
  const backfill = await deps.backfills.active(shopDomain);
  const backfillId = backfill?.status === "paused" ? backfill.id : null;
  const ids = await waitingDeadLetters(deps, shopDomain);
  if (backfillId === null && ids.length === 0) return { queued: false, why: "nothing waits" };
  const log = deps.logger.child({ shop: shopDomain });
  const inFlight = await deps.jobs.reconnectInFlight(shopDomain);
  if (inFlight) {
    log.debug({ jobId: inFlight }, "what waited for the shop's token is being resumed");
    return { queued: false, why: "its reconnect job is queued or running" };
  }
  const work = fingerprint(backfillId, ids);
  const key = queuedKey(deps.prefix, shopDomain);
  const before = await deps.redis.get(key);
  const seen = before ? (JSON.parse(before) as Queued) : null;
  const times = seen?.work === work ? seen.times : 0;
  if (times >= RECONNECT_NET_TIMES) {
    log.debug(
      { backfillId, deadLetters: ids.length, queuedToday: times },
      "what waited for the shop's token was queued enough times today; the entries say why they stay",
    );
    return { queued: false, why: `queued ${times} times today for the same work` };
  }
  const job = await deps.jobs.reconnected(shopDomain);
  const next = JSON.stringify({ work, times: times + 1 } satisfies Queued);
  // The day starts at the first time for this work; a different work starts its own.
  if (times === 0) await deps.redis.set(key, next, "PX", RECONNECT_NET_WINDOW_MS);
  else await deps.redis.set(key, next, "KEEPTTL");
  log.info(
    {
      jobId: job.id,
      backfillId,
      deadLetters: ids.length,
      // The how-manyth time today for this work, of RECONNECT_NET_TIMES.
      queuedToday: times + 1,
    },
    "what waited for the shop's token was never resumed: the sweep queued its job again",
  );
  return { queued: true, jobId: job.id, backfillId, deadLetters: ids.length };
}
