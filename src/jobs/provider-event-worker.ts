import { Worker } from "bullmq";
import {
  createProviderEventProcessor,
  type ProviderEventProcessorDeps,
} from "../engine/provider-event-processor.ts";
import { withLock } from "../lib/lock.ts";
import { errorText } from "../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { repeatEvery } from "../lib/repeat.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import {
  PROVIDER_EVENT_JOB,
  type ProviderEventJobData,
  ProviderEventQueue,
} from "../queue/provider-event-queue.ts";
import { knownKindsOnly } from "./job-kinds.ts";
import { tracedJob } from "./traced-job.ts";

export interface ProviderEventWorkerDeps extends ProviderEventProcessorDeps {
  redis: RedisConnection;
  prefix: string;
}

export interface ProviderEventWorkerHandle {
  worker: Worker<ProviderEventJobData>;
  close(): Promise<void>;
}

/** How long one order's tagging may hold its lock, and how long another waits for it. */
const ORDER_LOCK_MS = 30_000;
const ORDER_LOCK_WAIT_MS = 10_000;

/**
 * One order's claim tags are changed by one job at a time, across worker processes: a Redis
 * lock (`SET NX PX`, released only by its owner). A job that cannot get it in time fails and is
 * retried with backoff.
 */
export function orderLock(redis: RedisConnection, prefix: string) {
  return <T>(shop: string, sourceOrderId: string, work: () => Promise<T>): Promise<T> =>
    withLock(
      redis,
      `${prefix}:claim-tags:{${shop}:${sourceOrderId}}`,
      {
        ttlMs: ORDER_LOCK_MS,
        waitMs: ORDER_LOCK_WAIT_MS,
        busy: () =>
          new Error(`the tags of order ${sourceOrderId} of ${shop} are being changed; retried`),
      },
      work,
    );
}

/** Stored events still unprocessed at start are queued again, this many at most. */
const REQUEUE_AT_START = 1_000;
/** How often the worker looks for stored events whose job Redis lost. */
const KEEP_QUEUED_EVERY_MS = 60_000;

/**
 * The provider event worker: one BullMQ worker on the provider-events queue. At start it
 * queues again what was stored but not processed (a Redis outage between the two, a job that
 * failed every attempt): the stored rows, not the queue, are the record of what arrived.
 */
export async function startProviderEventWorker(
  ctx: ProviderEventWorkerDeps,
  options: { concurrency?: number; keepQueuedEveryMs?: number } = {},
): Promise<ProviderEventWorkerHandle> {
  const logger = ctx.logger.child({ component: "provider-event-worker" });
  const processor = createProviderEventProcessor({
    ...ctx,
    logger,
    withOrderLock: orderLock(ctx.redis, ctx.prefix),
  });
  const worker = new Worker<ProviderEventJobData>(
    QUEUE.providerEvents,
    knownKindsOnly(QUEUE.providerEvents, [PROVIDER_EVENT_JOB], tracedJob(processor), { logger }),
    {
      ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
      concurrency: options.concurrency ?? 4,
    },
  );
  onQueueErrors(worker, (error) =>
    logger.error({ err: { message: errorText(error) } }, "provider event worker error"),
  );
  worker.on("failed", (job, error) =>
    logger.warn(
      {
        eventRowId: job?.data.eventRowId,
        attempts: job?.attemptsMade,
        err: { message: errorText(error) },
      },
      "provider event not processed; retried with backoff",
    ),
  );
  const queue = new ProviderEventQueue(ctx.redis, ctx.prefix);
  try {
    for (const id of await ctx.events.unprocessed(REQUEUE_AT_START)) await queue.requeue(id);
  } catch (error) {
    logger.warn({ err: { message: errorText(error) } }, "unprocessed events not requeued");
  }
  // While it runs, every minute: a stored event whose job Redis lost (a restart without
  // persistence) is queued again. One whose job failed every attempt waits for the next start,
  // the provider's redelivery, or the failed job's removal after 7 days (then it is tried
  // again), so a failing event is not retried every minute. A look that fails (Redis or the
  // database away, which say so themselves) is at debug, and the next one tries again.
  const look = async () => {
    try {
      let requeued = 0;
      for (const id of await ctx.events.unprocessed(REQUEUE_AT_START)) {
        if (await queue.enqueueIfLost(id)) requeued++;
      }
      if (requeued > 0) {
        logger.info({ requeued }, "stored provider events had no job: queued again");
      }
    } catch (error) {
      logger.debug({ err: { message: errorText(error) } }, "provider events not looked at");
    }
  };
  const looking = repeatEvery(options.keepQueuedEveryMs ?? KEEP_QUEUED_EVERY_MS, look);
  return {
    worker,
    async close() {
      await looking.stop();
      await worker.close();
      await queue.close();
    },
  };
}
