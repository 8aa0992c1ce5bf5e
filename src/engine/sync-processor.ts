import { DelayedError, type Job } from "bullmq";
import type { Logger } from "pino";
import type { SnapshotStore } from "../ingest/snapshot-store.ts";
import { type DigestWording, type FailureDigest, lineLevel } from "../lib/failure-digest.ts";
import { errorText } from "../lib/redact.ts";
import {
  ProviderAuthError,
  type ProviderClient,
  ProviderConflictError,
  ProviderConnectionError,
  ProviderError,
  ProviderNotFoundError,
  type ProviderOrderId,
  ProviderServerError,
  type ProviderStoreId,
  ProviderValidationError,
} from "../provider/index.ts";
import type { DeadLetterData, FailureCategory, SyncJobData } from "../queue/jobs.ts";
import { deadLetterId, LIVE_WAITER_PRIORITY, type OrderQueues } from "../queue/order-queues.ts";
import { ShopifyTokenError } from "../shopify/admin-client.ts";
import type {
  KeptOutReason,
  LinkRepository,
  OrderState,
  ShopRecord,
  ShopRepository,
} from "../store/index.ts";
import type { MapError, MapResult } from "../sync/index.ts";
import {
  customerDataWithheld,
  mapOrder,
  PROTECTED_DATA_REASON,
  planSync,
  type ShopSettings,
  soldWithoutShipping,
} from "../sync/index.ts";
import type { OrderLinks } from "../sync/links.ts";
import type { SourceOrder } from "../sync/source-order.ts";
import type { CallResult, StoreRateLimiter } from "./limiter/index.ts";
import { executeOp, LinkMismatchError, type OpContext, type OpProvider } from "./op-executor.ts";

/** The start of a shop's pause reason when the provider refuses its credentials (then the detail). */
export const CREDENTIALS_REFUSED = "provider rejected the credentials";

/** What the processor calls at the provider: the operations, and its address and token. */
export type ProcessorProvider = OpProvider & Pick<ProviderClient, "baseUrl" | "getTokenInfo">;

export interface SyncProcessorDeps {
  snapshots: SnapshotStore;
  queues: OrderQueues;
  shops: ShopRepository;
  links: LinkRepository;
  limiter: StoreRateLimiter;
  /** The provider client for a shop's credentials (cached by the caller). */
  providerFor(shop: ShopRecord): ProcessorProvider;
  /** Fetches the whole order from the Shopify Admin API when a snapshot is known to be stale. */
  refetchOrder?(shop: ShopRecord, orderId: string): Promise<SourceOrder | null>;
  logger: Logger;
  metrics?: SyncMetrics;
  /**
   * Collapses a cause that repeats (a provider answering 500 to every attempt, a paused shop's
   * orders) into one line when it starts, a summary a minute and one line when it ends; each
   * attempt's own line is then written at debug. Without it every line is written as it comes.
   */
  failures?: FailureDigest;
}

export interface SyncMetrics {
  jobDone(outcome: string): void;
  providerCall(status: number | "error"): void;
  limiterWait(reason: string): void;
  lag(ms: number, priority: string): void;
  /** An entry written to the dead-letter queue, by its category. */
  deadLettered?(category: string): void;
}

export type SyncResult =
  | { outcome: "synced"; calls: number }
  | { outcome: "unchanged" }
  | { outcome: "waiting"; reason: string }
  | { outcome: "dead-lettered"; reason: string }
  | { outcome: "skipped"; reason: string };

/** The error class a dead-letter record names for a failure found before any provider call. */
const TERMINAL_NAMES: Partial<Record<FailureCategory, string>> = {
  config: "ConfigurationError",
  mapping: "MappingError",
};

/** A failure that retrying will not fix: it goes to the dead-letter queue at once. */
class Terminal extends Error {
  constructor(
    readonly category: FailureCategory,
    message: string,
    readonly fields?: { path: string; message: string; ref?: string }[],
  ) {
    super(message);
    this.name = TERMINAL_NAMES[category] ?? "TerminalError";
  }
}

/**
 * The sync job: reconcile one order's latest snapshot with what the provider has, sending only
 * the difference, each provider call only when the store's rate limiter grants a slot.
 *
 * Level-triggered: nothing here depends on which webhook queued the job. When the limiter says
 * wait, the job moves to the delayed set until the computed moment and gives its worker slot
 * back; when it runs again it re-plans from the links, so the calls already made are not
 * repeated.
 */
export function createSyncProcessor(deps: SyncProcessorDeps) {
  return async function processSync(job: Job<SyncJobData>, token?: string): Promise<SyncResult> {
    const { shop, orderId } = job.data;
    // Every line of this job carries its shop, order, job and trigger (never customer data).
    const log = jobLogger(deps.logger, {
      shop,
      orderId,
      jobId: job.id,
      trigger: job.data.trigger,
    });
    log.debug({ attempt: job.attemptsMade + 1 }, "sync job started");
    // The order's state is asked for with the shop, in the same turn: on Postgres the two
    // queries share a connection and a socket write (src/store/database.ts, `turnBatched`). It
    // goes unused when the shop is unknown, uninstalled or paused; readWork reports its failure.
    const stateRead = deps.links.orderState(shop, orderId);
    stateRead.catch(() => {});
    const attempt: Attempt = {
      calls: 0,
      wasDeadLettered: false,
      orderName: null,
      lastBody: undefined,
    };
    let shopRecord: ShopRecord | null;
    try {
      shopRecord = await deps.shops.getShop(shop);
    } catch (error) {
      // The link store is down (a Postgres restart, a locked SQLite file): BullMQ retries. The
      // first attempt of the cause says it; the next are counted (the database's own outage
      // line names DATABASE_URL and the fix). The last attempt dead-letters the order (in
      // Redis), so that an outage longer than the retries leaves it where an operator looks,
      // not only in BullMQ's failed set.
      const attempts = job.attemptsMade + 1;
      if (attempts >= (job.opts.attempts ?? 1)) {
        const dead = new Terminal(
          "exhausted",
          `gave up after ${attempts} attempts: could not read the shop: ${describe(error).message}`,
        );
        return await giveUp(deps, job, dead, error, attempt, attempts, log);
      }
      const { name: errorClass, message } = describe(error);
      const level = lineLevel(
        deps.failures,
        {
          shop,
          signature: `shop-read|${errorClass}`,
          wording: failingAttempts(shop, "still failing to read the shop"),
        },
        message,
      );
      log[level]({ errorClass, err: { message } }, "could not read the shop; will retry");
      throw error;
    }
    if (!shopRecord || shopRecord.status === "uninstalled") {
      deps.metrics?.jobDone("skipped");
      const reason = shopRecord ? "shop uninstalled" : "shop unknown";
      log.info({ reason }, "sync skipped");
      return { outcome: "skipped", reason };
    }

    try {
      const work = await readWork(deps, shopRecord, stateRead, orderId, attempt, log);
      if ("outcome" in work) return work;
      const sent = await sendUntilSynced(deps, job, token, work, attempt, log);
      if ("outcome" in sent) return sent;
      // The order and its other fulfillments are at the provider; what waits on the settings is
      // said now (config: replayed after the fix), and the order does not count as synced.
      if (work.mapped.held.length > 0) throw heldFulfillments(work.mapped.held);
      if (!sent.synced) {
        await deps.links.markSynced(
          shop,
          orderId,
          work.order.updatedAt,
          work.state.failure !== null,
        );
      }
      // It was dead-lettered and went through now (a retry, or a later event after a fix).
      if (attempt.wasDeadLettered && (await deps.queues.resolveDeadLetter(shop, orderId))) {
        log.info("dead letter resolved by this sync");
      }
      // Lag is webhook → provider acknowledgement: an order the provider already had adds none.
      if (attempt.calls > 0 && job.data.receivedAt)
        deps.metrics?.lag(Date.now() - job.data.receivedAt, job.data.priority);
      deps.metrics?.jobDone(attempt.calls > 0 ? "synced" : "unchanged");
      deps.failures?.succeeded(shop, attempt.calls > 0);
      log.info({ calls: attempt.calls }, attempt.calls > 0 ? "order synced" : "order unchanged");
      return attempt.calls > 0
        ? { outcome: "synced", calls: attempt.calls }
        : { outcome: "unchanged" };
    } catch (error) {
      if (error instanceof DelayedError) throw error;
      const terminal = classify(error);
      const attempts = job.attemptsMade + 1;
      const exhausted = !terminal && attempts >= (job.opts.attempts ?? 1);
      if (!terminal && !exhausted) {
        logRetry(deps, shop, error, attempts, job.opts.attempts ?? 1, log);
        throw error;
      }
      const dead =
        terminal ??
        new Terminal("exhausted", `gave up after ${attempts} attempts: ${describe(error).message}`);
      return await giveUp(deps, job, dead, error, attempt, attempts, log);
    }
  };
}

/**
 * Step 3, for a failure that retrying will not fix (or the last attempt): the dead-letter entry
 * with the request that failed, the failure recorded against the order for the settings page,
 * a shop whose credentials the provider refused paused, and one log line without customer data.
 */
async function giveUp(
  deps: SyncProcessorDeps,
  job: Job<SyncJobData>,
  dead: Terminal,
  error: unknown,
  attempt: Attempt,
  attempts: number,
  log: JobLog,
): Promise<SyncResult> {
  const { shop, orderId } = job.data;
  await deadLetter(deps, job, dead, error, attempt.lastBody, attempts);
  await deps.links.markFailed(
    shop,
    orderId,
    "dead-lettered",
    {
      message: dead.message,
      category: dead.category,
      fields: (dead.fields ?? []).map((f) => ({
        path: f.path,
        ...(f.ref ? { ref: f.ref } : {}),
      })),
    },
    attempt.orderName,
  );
  if (dead.category === "config" && error instanceof ProviderAuthError) {
    await deps.shops.setStatus(shop, "paused", `${CREDENTIALS_REFUSED}: ${error.message}`);
  }
  deps.metrics?.jobDone("dead-lettered");
  deps.metrics?.deadLettered?.(dead.category);
  // Our own reasons (config, mapping) name fields only; a provider's message may echo what
  // we sent (an email, an address), so for those only its status and field paths are logged.
  const ours = dead.category === "config" || dead.category === "mapping";
  const errorClass = describe(error).name;
  const status = error instanceof ProviderError ? error.status : undefined;
  const fields = dead.fields?.map((f) => f.path);
  // The first order of a cause says it at error; the next ones of the shop are counted in the
  // digest's summaries, each still at debug (and in its dead-letter record).
  const level = lineLevel(
    deps.failures,
    {
      shop,
      signature: [dead.category, errorClass, status ?? "", ...(fields ?? [])].join("|"),
      wording: deadLettering(shop, dead.category),
    },
    `${dead.category}, ${errorClass}${status ? ` ${status}` : ""}${ours ? `: ${dead.message}` : ""}`,
  );
  log[level](
    {
      category: dead.category,
      errorClass,
      ...(error instanceof ProviderError ? { status, requestId: error.requestId } : {}),
      ...(fields ? { fields } : {}),
      ...(ours ? { reason: dead.message } : {}),
    },
    "sync dead-lettered",
  );
  return { outcome: "dead-lettered", reason: dead.message };
}

/** What a job works on once its order is read and mapped. */
interface Work {
  shop: ShopRecord;
  storeId: ProviderStoreId;
  order: SourceOrder;
  mapped: Extract<MapResult, { ok: true }>;
  canceled: { reason: string | null; at: string } | null;
  /** The order's links, where they point and its failure, read before anything else. */
  state: OrderState;
}

/** What a job has done so far, for the finish and for its dead-letter entry if it fails. */
interface Attempt {
  calls: number;
  /** The order had been dead-lettered before this run (read before any call clears it). */
  wasDeadLettered: boolean;
  /** Known once the order's state is read: failures are shown by name (#1077). */
  orderName: string | null;
  /** The body of the operation in flight, kept for the dead-letter record if it fails. */
  lastBody: unknown;
}

/**
 * Step 1, before any call: the shop can sync, the order's full state is stored, it is not a test
 * order the shop keeps out, and it maps to a body the provider accepts. An early outcome
 * (waiting, skipped) or a Terminal ends the job here.
 */
async function readWork(
  deps: SyncProcessorDeps,
  shopRecord: ShopRecord,
  stateRead: Promise<OrderState>,
  orderId: string,
  attempt: Attempt,
  log: JobLog,
): Promise<Work | SyncResult> {
  const shop = shopRecord.shop;
  if (shopRecord.status === "paused") {
    throw new Terminal(
      "config",
      `sync is paused for this shop: ${shopRecord.pausedReason ?? "no reason given"}`,
    );
  }
  if (shopRecord.storeId === null) {
    throw new Terminal("config", "the shop has no provider store configured", [
      { path: "storeId", message: "set the provider store in the settings" },
    ]);
  }
  const storeId = shopRecord.storeId as ProviderStoreId;
  // Read before any call: creating the order clears the failure record. The links and where
  // they point come in the same read (one statement), for the first plan.
  const state = await stateRead;
  attempt.wasDeadLettered = state.failure === "dead-lettered";
  const order = await loadOrder(deps, shopRecord, orderId);
  attempt.orderName = order?.name ?? null;
  if (!order) {
    deps.metrics?.jobDone("waiting");
    const reason = "no full order state yet; the order webhook or a refetch will follow";
    log.info({ reason }, "sync waiting");
    return { outcome: "waiting", reason };
  }
  // Test orders (Bogus gateway, test mode) stay out of the provider unless the shop asks. One
  // the provider already has (sent while the setting was on) keeps following Shopify, so that a
  // later cancellation or refund is not lost when the setting is turned off.
  const sentBefore = state.links !== null && state.space?.storeId === storeId;
  if (order.test && !shopRecord.sendTestOrders && !sentBefore) {
    return keepOut(deps, shop, order, state, "test", attempt, log);
  }
  // Sold without an address to ship to and nothing ships (a walk-in point-of-sale sale, or a
  // customer known by a country only): the provider needs both addresses, which only the
  // merchant can give, and there is nothing to protect. Kept out until an edit in Shopify adds
  // one; an order the provider already has keeps following Shopify.
  if (!sentBefore && soldWithoutShipping(order)) {
    return keepOut(deps, shop, order, state, "no-address", attempt, log);
  }
  const settings = shopSettings(shopRecord, storeId, order.currency);
  const mapped = mapOrder(order, settings);
  if (!mapped.ok) {
    // Shopify withheld the customer (the app is not approved for protected customer data):
    // nothing identifies the customer to the provider, and the merchant needs to know why.
    if (mapped.errors.some((e) => e.kind === "customer") && customerDataWithheld(order)) {
      throw new Terminal("protected-data", PROTECTED_DATA_REASON, [
        { path: "customer", message: "withheld by Shopify (protected customer data)" },
      ]);
    }
    // What the shop's settings can fix is an operator's to fix; the rest is the order's.
    const config = mapped.errors.some((e) => e.kind === "settings");
    throw new Terminal(
      config ? "config" : "mapping",
      `the order cannot be sent as it is: ${mapped.errors.map((e) => `${e.field}: ${e.message}`).join("; ")}`,
      mapped.errors.map((e) => ({
        path: e.field,
        message: e.message,
        ...(e.ref ? { ref: e.ref } : {}),
      })),
    );
  }
  // Warnings name fields and Shopify IDs only (see src/sync): safe to log as they are.
  if (mapped.warnings.length > 0) {
    log.info({ warnings: mapped.warnings }, "order mapped with warnings");
  }
  const canceled = order.cancelledAt ? { reason: order.cancelReason, at: order.cancelledAt } : null;
  return { shop: shopRecord, storeId, order, mapped, canceled, state };
}

/** Why each kind of order is kept out of the provider, as the job's outcome says it. */
const KEPT_OUT: Record<KeptOutReason, string> = {
  test: "test order: not sent (the shop's test-order setting is off)",
  "no-address":
    "not sent: sold without an address to ship to and nothing ships, e.g. a point-of-sale sale",
};

/**
 * An order kept out of the provider on purpose: recorded (for the settings page's counts and
 * `connector orders show`), and a failure recorded before (a dead letter from an older rule, or
 * from before the order changed) cleared, so the order is no longer shown as failed.
 */
async function keepOut(
  deps: SyncProcessorDeps,
  shop: string,
  order: SourceOrder,
  state: OrderState,
  why: KeptOutReason,
  attempt: Attempt,
  log: JobLog,
): Promise<SyncResult> {
  await deps.shops.markKeptOut(shop, order.id, order.name, why, order.updatedAt);
  if (state.failure !== null) {
    await deps.links.clearFailure(shop, order.id);
    if (attempt.wasDeadLettered && (await deps.queues.resolveDeadLetter(shop, order.id))) {
      log.info("dead letter resolved: the order is kept out of the provider");
    }
  }
  deps.metrics?.jobDone("skipped");
  const reason = KEPT_OUT[why];
  log.info({ reason }, "sync skipped");
  return { outcome: "skipped", reason };
}

/**
 * Step 2: call the provider until the links hold what the order needs, re-planning after every
 * call (the links are the truth, so a resumed job never repeats a call). Each call takes a slot
 * of the store's budget first; a refused slot or a 429 moves the job to the delayed set.
 */
async function sendUntilSynced(
  deps: SyncProcessorDeps,
  job: Job<SyncJobData>,
  token: string | undefined,
  work: Work,
  attempt: Attempt,
  log: JobLog,
): Promise<{ synced: boolean } | SyncResult> {
  const { shop, orderId } = job.data;
  const { storeId, order, mapped, canceled } = work;
  const shopRecord = work.shop;
  const client = deps.providerFor(shopRecord);
  // The links read with the order's state serve the first plan; every later plan reads them.
  let known: OrderLinks | null | undefined = work.state.links;
  // A link into another store or environment than the shop's current one is never written
  // through: the shop switched, so the order is created afresh where it now goes.
  const space = work.state.space;
  if (
    space &&
    (space.storeId !== storeId ||
      (space.providerBaseUrl !== null && space.providerBaseUrl !== client.baseUrl))
  ) {
    await deps.links.retireOrder(
      shop,
      orderId,
      `the shop now sends its orders to store ${storeId}`,
    );
    known = null;
    log.info(
      { fromStore: space.storeId, toStore: storeId },
      "link pointed into the shop's previous provider store: retired, the order is sent again",
    );
  }
  // A 404 on a linked order retires its link once per job: the order is then looked up and
  // adopted, or created again (the create path), instead of dead-lettered.
  let retiredAfterNotFound = false;
  // The token first: a slot is taken only when the request can leave at once, so the time
  // from grant to the provider's arrival stays within the limiter's margin.
  await client.getTokenInfo();

  // Re-plan after every call: the links are the truth, so a resumed job never repeats a call.
  const wanted = {
    order: mapped.order,
    fulfillments: mapped.fulfillments,
    canceled,
    linesGone: mapped.linesGone,
  };
  // The last planned call's write also marks the order synced when its links need nothing
  // more (checked inside that transaction): one SQLite commit less per order.
  // No failure record read with the state: none to clear (only this order's job writes one).
  const clearFailure = work.state.failure !== null;
  const syncedCheck = {
    version: order.updatedAt,
    done: (after: Parameters<typeof planSync>[1]) =>
      mapped.held.length === 0 &&
      !reopened(after, canceled) &&
      planSync(wanted, after).length === 0,
    clearFailure,
  };
  let synced = false;
  let calls = 0;
  while (!synced) {
    const links = known !== undefined ? known : await deps.links.loadLinks(shop, orderId);
    known = undefined;
    // Canceled at the provider, live in Shopify (un-cancelled, or a canceled order adopted for
    // a live one): the provider cannot reopen it, so planning would send nothing and the order
    // would count as synced while the provider keeps it canceled. Said once, not retried.
    if (links && reopened(links, canceled)) throw reopenedOrder(links);
    const ops = planSync(wanted, links);
    const op = ops[0];
    if (!op) break;
    // An uninstall stops the shop at once: no further call, even in the middle of an order.
    // (Before the first call the shop's record, read as the job started, says it.)
    if (calls++ > 0 && (await deps.shops.statusOf(shop)) === "uninstalled") {
      deps.metrics?.jobDone("skipped");
      return { outcome: "skipped", reason: "shop uninstalled" };
    }
    const ctx: OpContext = {
      shop,
      sourceOrderId: orderId,
      orderName: order.name,
      storeId,
      providerBaseUrl: client.baseUrl,
      orderId: (links?.orderId ?? null) as ProviderOrderId | null,
      customerEmail: mapped.order.customer.email,
      clearFailure,
    };
    // Through the store's limiter: a slot (waited for in the process only briefly), the call in
    // it, the answer's RateLimit headers learned, the slot settled, and a 429 blocking the store.
    // The intent is written before the slot is taken, so the request leaves the moment it is
    // granted and the grant marks it as leaving (`sendsAtGrant`: no SENT call of its own). A
    // refusal gives the attempt back (the next one then knows no call was made).
    const intent = await deps.links.beginIntent(shop, orderId, op.key, op.kind);
    const giveBack = () => deps.links.releaseIntent(shop, orderId, op.key);
    let sent: CallResult<{ synced: boolean }>;
    let requested = false;
    try {
      sent = await deps.limiter.call(
        storeId,
        job.data.priority,
        () => {
          requested = true;
          attempt.lastBody = op.body;
          attempt.calls++;
          return executeOp(
            client,
            deps.links,
            op,
            ctx,
            ops.length === 1 ? syncedCheck : undefined,
            intent,
          );
        },
        { waiter: job.id ?? "", prepaidSlot: job.data.prepaidSlot ?? "", sendsAtGrant: true },
      );
    } catch (error) {
      // The limiter itself failed before the call (Redis away): BullMQ retries the job. (If the
      // attempt cannot be given back either, the next one looks the order up first: safe.)
      if (!requested) {
        await giveBack().catch(() => undefined);
        throw error;
      }
      deps.metrics?.providerCall(
        error instanceof ProviderError && error.status ? error.status : "error",
      );
      if (
        error instanceof ProviderNotFoundError &&
        op.kind !== "createOrder" &&
        !retiredAfterNotFound
      ) {
        retiredAfterNotFound = true;
        await deps.links.retireOrder(
          shop,
          orderId,
          `the provider answered 404 for order ${links?.orderId ?? "?"}`,
        );
        log.warn(
          { providerOrderId: links?.orderId },
          "the provider no longer has the linked order: link retired, looking the order up again",
        );
        continue;
      }
      if (
        error instanceof LinkMismatchError &&
        op.kind === "updateOrder" &&
        !retiredAfterNotFound &&
        (await healReusedId(deps, shop, orderId, client.baseUrl, error, log))
      ) {
        retiredAfterNotFound = true;
        continue;
      }
      throw error;
    }
    if (!sent.done) {
      // Refused before any request (a 429's attempt the executor gave back itself).
      if (!requested) await giveBack();
      if (sent.reason === "rate-limited") {
        // Not a failed attempt: the budget is shared; wait as long as the server says.
        deps.metrics?.providerCall(429);
        await job.moveToDelayed(sent.retryAtMs, token);
        throw new DelayedError();
      }
      deps.metrics?.limiterWait(sent.reason);
      // Handed back a little early (the queue's own delay): the job waits out the rest in
      // the limiter's short wait and takes its slot as it frees.
      if (job.data.priority === "live" && job.priority !== LIVE_WAITER_PRIORITY)
        await job.changePriority({ priority: LIVE_WAITER_PRIORITY });
      await job.moveToDelayed(sent.retryAtMs - sent.leadMs, token);
      throw new DelayedError();
    }
    synced = sent.value.synced;
    deps.metrics?.providerCall(200);
  }
  return { synced };
}

type JobLog = Pick<Logger, "debug" | "info" | "warn" | "error">;

/** How the digest sums up a shop's attempts that failed and will be retried, for one cause. */
function failingAttempts(shop: string, still: string): DigestWording {
  return {
    subject: `sync of ${shop}`,
    still,
    unit: "attempts failed",
    field: "attemptsFailed",
    level: "warn",
  };
}

/** How the digest sums up a shop's orders dead-lettered for one cause. */
function deadLettering(shop: string, category: string): DigestWording {
  return {
    subject: `sync of ${shop}`,
    still: "still dead-lettering",
    unit: "orders",
    field: "ordersDeadLettered",
    level: "error",
    after: `\`npx connector dlq list --shop ${shop} --reason ${category}\` lists them`,
  };
}

/**
 * A failed attempt that will be retried. The first of a cause for the shop is a warning with
 * the cause and what follows; the next ones are counted by the digest and written at debug.
 */
function logRetry(
  deps: SyncProcessorDeps,
  shop: string,
  error: unknown,
  attempts: number,
  maxAttempts: number,
  log: JobLog,
): void {
  const { name: errorClass, message } = describe(error);
  const status = error instanceof ProviderError ? error.status : undefined;
  const provider = error instanceof ProviderServerError || error instanceof ProviderConnectionError;
  // What is the same for every order: the class, the status, a no-answer's reason (a timeout).
  const noAnswer =
    error instanceof ProviderConnectionError ? message.split("got no answer: ")[1] : undefined;
  const level = lineLevel(
    deps.failures,
    {
      shop,
      signature: [errorClass, status ?? "", noAnswer ?? ""].join("|"),
      provider,
      wording: failingAttempts(shop, "still failing"),
    },
    message,
  );
  const fields = { errorClass, ...(status ? { status } : {}), attempts, err: { message } };
  if (level === "debug") {
    log.debug(fields, "sync failed; will retry");
    return;
  }
  const what =
    error instanceof ProviderServerError
      ? `the provider answers ${status ?? "5xx"} (${message})`
      : error instanceof ProviderConnectionError
        ? `the provider gives no answer (${message})`
        : message;
  const check =
    error instanceof ProviderServerError
      ? "check the provider's status"
      : error instanceof ProviderConnectionError
        ? "check the provider's status, PROVIDER_BASE_URL and this host's network"
        : "fix the cause this names";
  log.warn(
    fields,
    `sync of ${shop} failing: ${what}; its orders are retried with backoff, up to ${maxAttempts} attempts (SYNC_ATTEMPTS), then dead-lettered as exhausted; if it lasts, ${check}. Repeats are summed up every minute (LOG_LEVEL=debug shows each attempt)`,
  );
}

/** The dead letter of fulfillments held back by an unmapped location (MapResult's `held`). */
function heldFulfillments(held: MapError[]): Terminal {
  return new Terminal(
    "config",
    `the order is at the provider without ${held.length === 1 ? "a fulfillment" : `${held.length} fulfillments`}: ${held.map((e) => `${e.field}: ${e.message}`).join("; ")}`,
    held.map((e) => ({ path: e.field, message: e.message, ...(e.ref ? { ref: e.ref } : {}) })),
  );
}

/** Whether the provider holds the order canceled while Shopify's is not (see reopenedOrder). */
function reopened(links: OrderLinks | null, canceled: Work["canceled"]): boolean {
  return links !== null && links.canceledAt !== null && canceled === null;
}

/**
 * The dead letter of an order that is live in Shopify but canceled at the provider, where a
 * canceled order is immutable (docs/provider-contract.md): nothing the connector sends can
 * reopen it, so it says what the merchant can do instead of counting the order as synced.
 */
function reopenedOrder(links: OrderLinks): Terminal {
  return new Terminal(
    "provider-conflict",
    `the order is open in Shopify but provider order ${links.orderId} was canceled on ${links.canceledAt}, and the provider cannot reopen a canceled order: cancel it in Shopify again, or ask the provider to reopen it`,
    [{ path: "sourceCanceledOn", message: "canceled at the provider, not in Shopify" }],
  );
}

/**
 * An update answered for another order of ours: the provider lost this order and handed its ID
 * to that order's create, which raced this job (it read the link before the create retired it).
 * This order is healed like a 404: its link retired, the order looked up or created again. The
 * other order received this one update: its fields are sent again by a sync of its own. While
 * that create is not recorded yet, the job fails and retries (the create's record retires this
 * link and sends its own order's fields again). An answer for an order this connector does not
 * know stays a dead letter: someone else's order received the write (docs/provider-contract.md).
 */
async function healReusedId(
  deps: SyncProcessorDeps,
  shop: string,
  orderId: string,
  providerBaseUrl: string,
  mismatch: LinkMismatchError,
  log: JobLog,
): Promise<boolean> {
  const holder = (
    await deps.links.holdersOf(mismatch.orderId, providerBaseUrl, { shop, sourceOrderId: orderId })
  ).find((h) => h.sourceOrderId === mismatch.answeredFor);
  if (!holder) {
    if (!(await deps.snapshots.get(shop, mismatch.answeredFor))) return false;
    throw new Error(
      `provider order ${mismatch.orderId} was just given to Shopify order ${mismatch.answeredFor}, whose create is not recorded yet`,
    );
  }
  await deps.links.forgetOrderHash(holder.shop, holder.sourceOrderId, mismatch.orderId);
  await deps.queues.enqueueSync({
    shop: holder.shop,
    orderId: holder.sourceOrderId,
    priority: "live",
    trigger: "resync",
    receivedAt: Date.now(),
  });
  await deps.links.retireOrder(
    shop,
    orderId,
    `the provider gave order ${mismatch.orderId} to Shopify order ${mismatch.answeredFor}`,
  );
  log.warn(
    { providerOrderId: mismatch.orderId, otherOrderId: mismatch.answeredFor },
    "the provider gave the linked order's ID to another order: link retired, the other order is sent again",
  );
  return true;
}

/**
 * The job's logger, made only when a line is actually written at its level: a pino child with
 * bindings and redaction costs more than the rest of a quiet job's logging (bench:worker).
 */
function jobLogger(logger: Logger, bindings: Record<string, unknown>): JobLog {
  let child: Logger | undefined;
  const at =
    (level: "debug" | "info" | "warn" | "error") =>
    (...args: Parameters<Logger["info"]>) => {
      if (!logger.isLevelEnabled(level)) return;
      child ??= logger.child(bindings);
      child[level](...args);
    };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } as JobLog;
}

async function loadOrder(deps: SyncProcessorDeps, shop: ShopRecord, orderId: string) {
  const snapshot = await deps.snapshots.get(shop.shop, orderId);
  if (snapshot?.staleSince && deps.refetchOrder) {
    const fresh = await deps.refetchOrder(shop, orderId);
    if (fresh) {
      await deps.snapshots.storeOrder(fresh);
      return (await deps.snapshots.get(shop.shop, orderId))?.order ?? fresh;
    }
  }
  return snapshot?.order ?? null;
}

function shopSettings(
  shop: ShopRecord,
  storeId: ProviderStoreId,
  orderCurrency: string,
): ShopSettings {
  return {
    storeId,
    currency: shop.storeCurrency ?? shop.shopCurrency ?? orderCurrency,
    protectionVariantIds: shop.protectionVariantIds,
    locationMap: shop.locationMap,
    defaultLocationId: shop.defaultLocationId,
  };
}

/** Which failures retrying cannot fix (docs/principles.md: retries are bounded and explained: say why next to the rule). */
function classify(error: unknown): Terminal | null {
  if (error instanceof Terminal) return error;
  // 400: the provider refused what we sent; the same body will be refused again.
  if (error instanceof ProviderValidationError) {
    return new Terminal(
      "provider-validation",
      `the provider refused the request: ${error.message}`,
      error.fields,
    );
  }
  // 401 after a token renewal, 403: credentials or scopes are wrong; an operator must fix them.
  if (error instanceof ProviderAuthError) {
    return new Terminal(
      "config",
      `the provider refused our credentials (${error.kind}): ${error.message}`,
    );
  }
  // 404 on an order we created: it was removed at the provider, or the store is not ours.
  if (error instanceof ProviderNotFoundError) {
    return new Terminal(
      "provider-not-found",
      `the provider does not know this order or store: ${error.message}`,
    );
  }
  // Shopify refuses the shop's token: only the merchant reopening the app fixes it, and the
  // reopening retries these entries; retrying before that would only fail again.
  if (error instanceof ShopifyTokenError) return new Terminal("config", error.message);
  // The linked order answered as another Shopify order's: nothing more is written through it.
  if (error instanceof LinkMismatchError) {
    return new Terminal("link-mismatch", error.message);
  }
  // 409 that the executor could not resolve (for example a change to an order canceled there).
  if (error instanceof ProviderConflictError) {
    return new Terminal("provider-conflict", `the provider refused the change: ${error.message}`);
  }
  return null;
}

function describe(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: errorText(error) }
    : { name: "Error", message: String(error) };
}

async function deadLetter(
  deps: SyncProcessorDeps,
  job: Job<SyncJobData>,
  dead: Terminal,
  cause: unknown,
  body: unknown,
  attempts: number,
) {
  const now = new Date().toISOString();
  const providerError = cause instanceof ProviderError ? cause : undefined;
  const data: DeadLetterData = {
    shop: job.data.shop,
    orderId: job.data.orderId,
    topic: job.data.trigger,
    reason: dead.message,
    category: dead.category,
    errorClass:
      cause instanceof Terminal
        ? cause.name
        : cause instanceof Error
          ? cause.constructor.name
          : "Error",
    ...(dead.fields ? { fields: dead.fields } : {}),
    // The request as the client sent it: its method and path, and the operation's body.
    ...(providerError
      ? { request: { method: providerError.method, path: providerError.path, body } }
      : {}),
    ...(providerError
      ? {
          response: {
            ...(providerError.status !== undefined ? { status: providerError.status } : {}),
            ...(providerError.requestId ? { requestId: providerError.requestId } : {}),
            body: providerError.body,
          },
        }
      : {}),
    attempts,
    firstFailedAt: now,
    lastFailedAt: now,
  };
  await deps.queues.addDeadLetter(deadLetterId(job.data.shop, job.data.orderId), data);
}
