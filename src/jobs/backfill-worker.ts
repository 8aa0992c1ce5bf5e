import { Worker } from "bullmq";
import {
  BACKFILL_JOB,
  type BackfillJobData,
  type BackfillProcessorDeps,
  type BackfillResult,
  createBackfillProcessor,
} from "../backfill/index.ts";
import { errorText } from "../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../queue/names.ts";
import { knownKindsOnly } from "./job-kinds.ts";
import { tracedJob } from "./traced-job.ts";

/** What the backfill worker runs on: the processor's deps and its Redis. */
export interface BackfillWorkerDeps extends BackfillProcessorDeps {
  redis: RedisConnection;
  prefix: string;
}

export interface BackfillWorkerOptions {
  concurrency?: number;
}

export interface BackfillWorkerHandle {
  worker: Worker<BackfillJobData, BackfillResult>;
  /** Stops at the next order: running backfills save their cursor and go back to the queue. */
  close(): Promise<void>;
}

/** The backfill worker: walks shops' orders through the Admin API into the sync queue. */
export function startBackfillWorker(
  ctx: BackfillWorkerDeps,
  options: BackfillWorkerOptions = {},
): BackfillWorkerHandle {
  const stopping = new AbortController();
  const logger = ctx.logger.child({ component: "backfill-worker" });
  const processor = tracedJob(
    createBackfillProcessor({
      backfills: ctx.backfills,
      shops: ctx.shops,
      shopifyAdmin: ctx.shopifyAdmin,
      snapshots: ctx.snapshots,
      queues: ctx.queues,
      limiter: ctx.limiter,
      logger,
    }),
  );
  const worker = new Worker<BackfillJobData, BackfillResult>(
    QUEUE.backfill,
    knownKindsOnly(
      QUEUE.backfill,
      [BACKFILL_JOB],
      (job, token, signal?: AbortSignal) =>
        processor(
          job,
          token,
          signal ? AbortSignal.any([signal, stopping.signal]) : stopping.signal,
        ),
      { logger },
    ),
    {
      ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
      concurrency: options.concurrency ?? 2,
      // A crashed worker's backfill returns to the queue after this and resumes from its cursor.
      lockDuration: 60_000,
    },
  );
  onQueueErrors(worker, (error) =>
    ctx.logger.error({ err: { message: errorText(error) } }, "backfill worker error"),
  );
  return {
    worker,
    async close() {
      stopping.abort();
      await worker.close();
    },
  };
}
