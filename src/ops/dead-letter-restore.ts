import type { Logger } from "pino";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { retiredKey } from "../queue/dead-letter-record.ts";
import type { DeadLetterData } from "../queue/jobs.ts";
import { deadLetterId, type OrderQueues } from "../queue/order-queues.ts";
import type { LinkRepository } from "../store/index.ts";

/** How many of a shop's failure records one read takes. */
export const RESTORE_BATCH = 500;
/** How many reads one sweep makes at most: 5,000 entries, a few seconds of round trips. */
export const RESTORE_BATCHES_PER_SWEEP = 10;

/**
 * Where this Redis says how far the shop's dead letters were restored: `done`, or the last
 * Shopify order ID of a restore that goes on at the next sweep. Redis loses it with the
 * entries, so an empty Redis restores again.
 */
export const restoreKey = (prefix: string, shop: string) => `${prefix}:dlq:restored:{${shop}}`;

export interface DeadLetterRestoreDeps {
  links: Pick<LinkRepository, "deadLetteredFailures" | "lastFailure">;
  queues: Pick<OrderQueues, "deadLetter" | "addDeadLetter" | "resolveDeadLetter">;
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
}

/**
 * Makes the shop's dead letters again from the database after Redis lost them, run by each
 * sweep of the shop. The dead-letter queue lives in Redis; the database keeps each order's
 * last failure (its reason, category and fields, written after the entry). Without this, an
 * order dead-lettered before Redis came back empty left the operator's queue for good, and the
 * sweep leaves such an order alone until it changes in Shopify: nobody would retry it.
 *
 * Once this Redis has restored the shop (restoreKey), a sweep costs one GET. Otherwise it
 * reads the shop's dead-lettered orders `batch` at a time, in ID order from where the last
 * sweep stopped, `batches` reads at most, and records an entry for each with neither an entry
 * in the queue nor a retry in flight (the retired history a retry keeps until its sync ends).
 * An order whose entry an operator discarded is not read (LinkRepository.markDiscarded).
 * Answers how many entries it made and kept.
 */
export async function restoreDeadLetters(
  deps: DeadLetterRestoreDeps,
  shop: string,
  { batch = RESTORE_BATCH, batches = RESTORE_BATCHES_PER_SWEEP } = {},
): Promise<number> {
  const key = restoreKey(deps.prefix, shop);
  let from = await deps.redis.get(key);
  let restored = 0;
  for (let read = 0; read < batches && from !== "done"; read++) {
    const step = await restoreBatch(deps, shop, from, batch);
    restored += step.restored;
    from = step.next;
    await deps.redis.set(key, from);
  }
  if (restored > 0) {
    deps.logger.warn(
      { shop, restored },
      `dead letters restored from the database: Redis had lost them (restarted without persistence?); \`connector dlq list --shop ${shop}\` lists them, without their request and response`,
    );
  }
  return restored;
}

/**
 * One read of the restore: up to `batch` entries after the cursor `from` (null: from the
 * start). Answers how many it made and kept, and the cursor to go on from (`done` at the end).
 */
async function restoreBatch(
  deps: DeadLetterRestoreDeps,
  shop: string,
  from: string | null,
  batch: number,
): Promise<{ restored: number; next: string }> {
  const rows = await deps.links.deadLetteredFailures(shop, from, batch);
  const queue = deps.queues.deadLetter;
  const ids = rows.map((r) => deadLetterId(shop, r.sourceOrderId));
  // One key per EXISTS: on a cluster the entry and its retired history sit in other slots.
  const held = await Promise.all(
    ids.map(
      async (id) =>
        (await deps.redis.exists(queue.toKey(id))) +
          (await deps.redis.exists(retiredKey(deps.prefix, id))) >
        0,
    ),
  );
  const at = new Date().toISOString();
  const made: string[] = [];
  for (const [k, row] of rows.entries()) {
    const id = ids[k];
    if (id === undefined || held[k]) continue;
    const data: DeadLetterData = {
      shop,
      orderId: row.sourceOrderId,
      topic: null,
      reason: row.error,
      // A failure recorded before categories were kept (migration 0008) has none to restore.
      category: row.category ?? "exhausted",
      errorClass: "unknown (restored)",
      fields: row.fields.map((f) => ({
        path: f.path,
        message: f.ref ? `Shopify ID ${f.ref}` : "",
      })),
      attempts: 0,
      firstFailedAt: row.failedAt,
      lastFailedAt: row.failedAt,
      restoredAt: at,
    };
    await deps.queues.addDeadLetter(id, data);
    made.push(row.sourceOrderId);
  }
  const restored = made.length - (await resolveSyncedMeanwhile(deps, shop, made));
  const last = rows.at(-1);
  return { restored, next: rows.length === batch && last ? last.sourceOrderId : "done" };
}

/**
 * Removes the entries just made for orders that synced while they were made. A sync that ends
 * between the read of the failure records and the entry's write finds no entry to resolve, and
 * would leave one listed for an order the provider has. So each order's failure record is read
 * again once its entry is written: gone (synced, or kept out on purpose), the entry goes as the
 * sync itself removes one. A sync that ends after this read finds the entry and removes it
 * itself; a failure record still there (the order still dead-lettered, or again: a sync
 * that fails merges its failure into the entry) keeps it. Answers how many it removed.
 */
async function resolveSyncedMeanwhile(
  deps: DeadLetterRestoreDeps,
  shop: string,
  made: string[],
): Promise<number> {
  let removed = 0;
  for (const orderId of made) {
    if ((await deps.links.lastFailure(shop, orderId)) !== null) continue;
    if (await deps.queues.resolveDeadLetter(shop, orderId)) removed++;
  }
  return removed;
}
