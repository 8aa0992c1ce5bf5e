import { type Job, Queue } from "bullmq";
import type { Logger } from "pino";
import { errorText } from "../lib/redact.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import {
  type AdminClientFactory,
  OrderSource,
  type OrderVersion,
  updatedWindowQuery,
} from "../shopify/index.ts";
import type { LinkRepository, ShopRecord, ShopRepository } from "../store/index.ts";
import type { ShopDomain } from "../sync/source-order.ts";
import type { CheckpointRepository } from "./checkpoint-repository.ts";
import { feedOrders, type OrderFeederDeps } from "./order-feeder.ts";

export interface SweepJobData {
  shop: string;
}

export interface SweepResult {
  checked: number;
  queued: number;
  since: string;
}

/** Looked back past the checkpoint: Shopify's search index and clocks may trail a little. */
export const SWEEP_OVERLAP_MS = 5 * 60_000;
/** A shop swept for the first time: the last day (webhooks can arrive up to a day late). */
export const FIRST_SWEEP_LOOKBACK_MS = 24 * 3_600_000;
/**
 * How far back an owed order holds the checkpoint at most: an order owed longer is stuck (its
 * sync keeps failing short of the dead-letter queue), and the sweep would read a longer window
 * at every run.
 */
export const OWED_HOLD_MAX_MS = 24 * 3_600_000;
/**
 * How far back the first sweep of a shop reads once Redis lost its data: the jobs of a backlog
 * went with it, and an order owed longer than OWED_HOLD_MAX_MS no longer holds the checkpoint.
 * A week of IDs and versions is a few pages for most shops, read once.
 */
export const LOST_LOOKBACK_MS = 7 * 86_400_000;

/**
 * Whether this Redis still holds what it held for a shop: a key the shop's sweep sets, lost with
 * everything else when Redis comes back empty (a restart without persistence, a new instance).
 */
export class RedisLossMarks {
  constructor(
    private readonly redis: RedisConnection,
    private readonly prefix: string,
  ) {}

  #key(shop: string) {
    return `${this.prefix}:sweep:kept:{${shop}}`;
  }

  /** True when the shop's mark is missing: Redis lost its data, or the shop was never swept. */
  async lost(shop: string): Promise<boolean> {
    return (await this.redis.exists(this.#key(shop))) === 0;
  }

  async keep(shop: string): Promise<void> {
    await this.redis.set(this.#key(shop), new Date().toISOString());
  }
}

export const sweepSchedulerId = (shop: string) => `sweep-${shop}`;

export interface SweepDeps extends OrderFeederDeps {
  shops: ShopRepository;
  links: LinkRepository;
  checkpoints: CheckpointRepository;
  shopifyAdmin: AdminClientFactory;
  logger: Logger;
  /**
   * Re-creates the shop's missing webhook subscriptions and resyncs their gap (the installer's
   * check): Shopify deletes a subscription after repeated failed deliveries.
   */
  checkSubscriptions?: (shop: string) => Promise<unknown>;
  /**
   * Exchanges the shop's non-expiring Shopify token for an expiring one (ShopTokens.migrate):
   * a migration start-up could not make is tried again each sweep, well before Shopify stops
   * taking non-expiring tokens (2027-01-01).
   */
  migrateToken?: (shop: string) => Promise<unknown>;
  /**
   * Retention of the provider's event bodies: reduces the bodies older than the retention
   * period to their IDs and answers how many (the hourly `prune-provider-events` job).
   */
  pruneProviderEvents?: () => Promise<number>;
  /**
   * The safety net of the shop's reconnect (ops/reconnect-net.ts): queues again the one job
   * that resumes what waited for the shop's token (a paused backfill, the dead letters of the
   * refusal) when that job never ran. Called once the sweep has read Shopify with the shop's
   * token, so Shopify accepts it now.
   */
  resumeWaiting?: (shop: ShopRecord) => Promise<unknown>;
  /**
   * Queues again the job of the shop's running backfill when Redis lost it, or BullMQ failed it
   * unfinished (BackfillQueue's keepQueued): the row keeps its cursor, but nothing else would
   * walk on from it.
   */
  keepBackfillQueued?: (shop: ShopRecord) => Promise<unknown>;
  /**
   * Makes the shop's dead letters again from the database's failure records when Redis lost
   * them (ops/dead-letter-restore.ts). Before resumeWaiting, which then finds the restored
   * dead letters of a refused token.
   */
  restoreDeadLetters?: (shop: ShopRecord) => Promise<unknown>;
  /** Says when Redis lost its data since the shop's last sweep (see LOST_LOOKBACK_MS). */
  lossMarks?: Pick<RedisLossMarks, "lost" | "keep">;
  /** Told what each shop's sweep read and queued (the sweep's counters, per provider store). */
  onSwept?: (shop: ShopRecord, result: SweepResult) => void;
}

/** The maintenance queue's scheduler of the provider events' retention. */
export const PRUNE_SCHEDULER_ID = "prune-provider-events";
/** The job name of a shop's reconciliation sweep (its job scheduler's jobs). */
export const SWEEP_JOB = "sweep";
/** How often bodies past the retention period are pruned. */
export const PRUNE_EVERY_MS = 3_600_000;

/**
 * Why an order needs a reconcile, or null: the provider has never had it, or has an older
 * version than Shopify's. An order whose last sync was dead-lettered is left to the
 * dead-letter queue unless it changed after that failure. An order kept out of the provider on
 * purpose (a test order, a sale that ships nothing) is not missing: it is left alone at the
 * version it was kept out at, unless Shopify changed it since (an edit may add an address) or
 * the shop now sends test orders.
 */
export async function staleReason(
  deps: Pick<SweepDeps, "links" | "checkpoints" | "shops">,
  shop: Pick<ShopRecord, "shop" | "sendTestOrders">,
  order: OrderVersion,
): Promise<"missing" | "stale" | null> {
  const updated = Date.parse(order.updatedAt);
  const deadAt = await deps.checkpoints.deadLetteredAt(shop.shop, order.id);
  if (deadAt && Date.parse(deadAt) >= updated) return null;
  const link = await deps.links.getOrderLinkRow(shop.shop, order.id);
  if (!link) {
    const kept = await deps.shops.keptOutVersion(shop.shop, order.id);
    const stillKeptOut = kept !== null && (kept.reason !== "test" || !shop.sendTestOrders);
    const seen = kept?.shopifyUpdatedAt ? Date.parse(kept.shopifyUpdatedAt) : Number.NaN;
    if (stillKeptOut && seen >= updated) return null;
    return "missing";
  }
  if (!link.syncedVersion || Date.parse(link.syncedVersion) < updated) return "stale";
  return null;
}

/**
 * The reconciliation sweep of one shop: lists the orders updated since the last checkpoint
 * (IDs and versions only, 250 per page), compares them with the links, reads the missing and
 * stale ones in full and queues them at bulk priority. A webhook Shopify never delivered heals
 * here without anyone noticing.
 *
 * The checkpoint moves to the sweep's start, but never past an order the sweep found owed (the
 * oldest one's `updated_at`, up to OWED_HOLD_MAX_MS back): the next sweep reads it again, and
 * it holds the checkpoint until the provider has it (or it is dead-lettered). An order whose job
 * is lost before it ran (Redis came back empty in a backlog) is then found again.
 */
export async function sweepShop(
  deps: SweepDeps,
  shop: ShopRecord,
  now = Date.now(),
  options: {
    /** Redis lost its data since the last sweep: reads LOST_LOOKBACK_MS back at least. */
    redisLost?: boolean;
  } = {},
): Promise<SweepResult> {
  const checkpoint = await deps.checkpoints.get(shop.shop);
  const installed = shop.installedAt ? Date.parse(shop.installedAt) - SWEEP_OVERLAP_MS : 0;
  const fromCheckpoint = checkpoint
    ? Date.parse(checkpoint) - SWEEP_OVERLAP_MS
    : Math.max(now - FIRST_SWEEP_LOOKBACK_MS, installed);
  // Never before the install, and never less than the checkpoint's window.
  const sinceMs = options.redisLost
    ? Math.min(fromCheckpoint, Math.max(now - LOST_LOOKBACK_MS, installed))
    : fromCheckpoint;
  if (checkpoint && sinceMs < fromCheckpoint) {
    deps.logger.info(
      { shop: shop.shop },
      `Redis holds nothing of the shop since its last sweep (restarted without persistence?): this sweep reads the orders of the last ${Math.round((now - sinceMs) / 86_400_000)} days`,
    );
  }
  const since = new Date(sinceMs).toISOString();
  const source = new OrderSource(deps.shopifyAdmin.for(shop), shop.shop as ShopDomain);
  let checked = 0;
  /** The oldest `updated_at` of an order found owed, in ms. */
  let oldestOwed = Number.POSITIVE_INFINITY;
  async function* staleOrders() {
    let after: string | null = null;
    do {
      const page = await source.versions({ query: updatedWindowQuery(since, null), after });
      checked += page.orders.length;
      for (const version of page.orders) {
        const reason = await staleReason(deps, shop, version);
        if (!reason) continue;
        const updated = Date.parse(version.updatedAt);
        if (Number.isFinite(updated)) oldestOwed = Math.min(oldestOwed, updated);
        // Its job waits in a backlog: it holds the checkpoint, and is not read from Shopify
        // again. Should it sync an older version, the next sweep finds it stale and reads it.
        const queue = await deps.queues.syncQueueFor(shop.shop, version.id);
        if (await deps.queues.hasPendingJob(queue, shop.shop, version.id)) continue;
        const order = await source.fetchOrder(version.id);
        if (!order) continue;
        deps.logger.info({ shop: shop.shop, orderId: order.id, reason }, "sweep queues an order");
        yield order;
      }
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    } while (after);
  }
  const { queued } = await feedOrders(deps, shop, staleOrders(), { trigger: "sweep" });
  const held = Math.max(Math.min(now, oldestOwed), now - OWED_HOLD_MAX_MS);
  await deps.checkpoints.set(shop.shop, new Date(held).toISOString());
  return { checked, queued, since };
}

/** The maintenance queue's per-shop sweep schedulers. */
export class SweepScheduler {
  readonly queue: Queue<SweepJobData>;

  constructor(
    connection: RedisConnection,
    prefix: string,
    private readonly everyMs: number,
  ) {
    this.queue = new Queue<SweepJobData>(QUEUE.maintenance, queueOptions(connection, prefix));
    onQueueErrors(this.queue);
  }

  /** Creates or updates the shop's scheduler (idempotent; safe at every start). */
  async schedule(shop: string) {
    await this.queue.upsertJobScheduler(
      sweepSchedulerId(shop),
      { every: this.everyMs },
      {
        name: SWEEP_JOB,
        data: { shop },
        opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 }, attempts: 3 },
      },
    );
  }

  /** The hourly retention job of the provider's event bodies (idempotent). */
  async schedulePrune(everyMs = PRUNE_EVERY_MS) {
    await this.queue.upsertJobScheduler(
      PRUNE_SCHEDULER_ID,
      { every: everyMs },
      {
        name: PRUNE_SCHEDULER_ID,
        data: { shop: "" },
        opts: { removeOnComplete: { count: 10 }, removeOnFail: { count: 10 }, attempts: 3 },
      },
    );
  }

  async unschedule(shop: string) {
    await this.queue.removeJobScheduler(sweepSchedulerId(shop));
  }

  /**
   * One scheduler per active shop that has a Shopify token; none for the others. Only the
   * missing ones are created and only the unwanted ones removed, so calling it often (shops are
   * installed and uninstalled while workers run) never pushes a shop's next sweep back.
   */
  async scheduleAll(shops: ShopRepository) {
    const existing = new Set((await this.queue.getJobSchedulers()).map((s) => s.key));
    for (const shop of await shops.listShops()) {
      const wanted = shop.status !== "uninstalled" && shop.accessTokenSealed !== null;
      const id = sweepSchedulerId(shop.shop);
      if (wanted && !existing.has(id)) await this.schedule(shop.shop);
      if (!wanted && existing.has(id)) await this.unschedule(shop.shop);
    }
  }

  close() {
    return this.queue.close();
  }
}

export function createSweepProcessor(deps: SweepDeps) {
  return async function processSweep(
    job: Job<SweepJobData>,
  ): Promise<SweepResult | { pruned: number } | { skipped: string }> {
    if (job.name === PRUNE_SCHEDULER_ID && deps.pruneProviderEvents) {
      const pruned = await deps.pruneProviderEvents();
      deps.logger.info({ pruned, jobId: job.id }, "provider event bodies past retention pruned");
      return { pruned };
    }
    if (job.name !== SWEEP_JOB) return { skipped: `not a sweep job: ${job.name}` };
    let shop = await deps.shops.getShop(job.data.shop);
    if (shop?.status !== "active") return { skipped: "shop not active" };
    if (!shop.accessTokenSealed) return { skipped: "no Shopify access token" };
    if (!shop.refreshTokenSealed && deps.migrateToken) {
      try {
        await deps.migrateToken(shop.shop);
      } catch (error) {
        // The token still reads the shop until Shopify makes the exchange; the next sweep retries.
        deps.logger.warn(
          { shop: shop.shop, err: { message: errorText(error) } },
          "non-expiring Shopify token not migrated yet; the next sweep tries again",
        );
      }
      shop = await deps.shops.getShop(job.data.shop);
      // Refused: paused, waiting for the merchant to open the app.
      if (shop?.status !== "active") return { skipped: "shop not active" };
    }
    if (deps.checkSubscriptions) {
      try {
        await deps.checkSubscriptions(shop.shop);
      } catch (error) {
        // The sweep itself still heals what the missing webhooks would have carried.
        deps.logger.warn(
          { shop: shop.shop, err: { message: errorText(error) } },
          "webhook subscription check failed; sweeping anyway",
        );
      }
    }
    // Redis lost its data since the shop's last sweep: the jobs of a backlog went with it, so
    // this sweep reads a week back instead of from the checkpoint.
    const lost = (await deps.lossMarks?.lost(shop.shop)) ?? false;
    const result = await sweepShop(deps, shop, Date.now(), { redisLost: lost });
    if (lost) await deps.lossMarks?.keep(shop.shop);
    // The shop's upkeep after the sweep read Shopify. A step that fails is one warning: what it
    // looks after keeps waiting, with nothing lost, and the next sweep looks again.
    const upkeep = [
      [deps.keepBackfillQueued, "could not look at the shop's backfill"],
      [deps.restoreDeadLetters, "could not look for dead letters Redis lost"],
      [deps.resumeWaiting, "could not look for what waited for the shop's token"],
    ] as const;
    for (const [step, failed] of upkeep) {
      try {
        await step?.(shop);
      } catch (error) {
        deps.logger.warn(
          { shop: shop.shop, err: { message: errorText(error) } },
          `${failed}; the next sweep looks again`,
        );
      }
    }
    deps.onSwept?.(shop, result);
    deps.logger.info({ shop: shop.shop, ...result, jobId: job.id }, "reconciliation sweep done");
    return result;
  };
}
