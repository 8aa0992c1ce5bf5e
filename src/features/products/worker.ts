import { Worker } from "bullmq";
import { knownKindsOnly } from "../../jobs/job-kinds.ts";
import { tracedJob } from "../../jobs/traced-job.ts";
import { errorText } from "../../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../../lib/redis-keys.ts";
import { onQueueErrors } from "../../lib/redis-wait.ts";
import { repeatEvery } from "../../lib/repeat.ts";
import { freeJobId } from "../../queue/fixed-id-job.ts";
import { QUEUE, queueOptions } from "../../queue/names.ts";
import {
  createProductImportProcessor,
  PRODUCT_IMPORT_JOB,
  type ProductImportJobData,
  type ProductImportProcessorDeps,
  ProductImportQueue,
  type ProductImportRepository,
  productImportJobId,
} from "./index.ts";

export interface ProductImportWorkerDeps extends ProductImportProcessorDeps {
  imports: Pick<ProductImportRepository, "toRunFromSettings">;
  redis: RedisConnection;
  prefix: string;
}

/** How often the worker looks for a settings-page import that no job runs. */
const KEEP_QUEUED_EVERY_MS = 60_000;

/** The worker of settings-page product imports: one at a time per process, paced per store. */
export function startProductImportWorker(
  ctx: ProductImportWorkerDeps,
  options: { keepQueuedEveryMs?: number } = {},
) {
  const stopping = new AbortController();
  const logger = ctx.logger;
  const processor = tracedJob(createProductImportProcessor(ctx));
  const worker = new Worker<ProductImportJobData>(
    QUEUE.productImport,
    knownKindsOnly(
      QUEUE.productImport,
      [PRODUCT_IMPORT_JOB],
      (job, _token, signal?: AbortSignal) =>
        processor(job, signal ? AbortSignal.any([signal, stopping.signal]) : stopping.signal),
      { logger },
    ),
    {
      ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
      concurrency: 1,
      // A killed worker's import returns to the queue after this and resumes from its rows.
      lockDuration: 60_000,
    },
  );
  onQueueErrors(worker, (error) =>
    logger.error({ err: { message: errorText(error) } }, "product import worker error"),
  );

  // An import from the settings page is run by its job alone. One whose job Redis lost (a
  // restart without persistence), or whose job ended without finishing it (its worker killed
  // more often than BullMQ allows), would show "running" for ever: it is queued again, at start
  // and every minute, and resumes from the rows done. A look that fails (Redis or the database
  // away, which say so themselves) is at debug, and the next one tries again.
  const queue = new ProductImportQueue(ctx.redis, ctx.prefix);
  const keepQueued = async () => {
    for (const running of await ctx.imports.toRunFromSettings()) {
      const id = productImportJobId(running.id);
      const state = await freeJobId(queue.queue, id);
      if (state === null) continue;
      await queue.enqueue({ importId: running.id, shop: running.shop });
      logger.info(
        { shop: running.shop, importId: running.id, job: state },
        "a product import had no job running it: queued again, from the rows done",
      );
    }
  };
  const looking = repeatEvery(
    options.keepQueuedEveryMs ?? KEEP_QUEUED_EVERY_MS,
    () =>
      keepQueued().catch((error: unknown) =>
        logger.debug({ err: { message: errorText(error) } }, "product imports not looked at"),
      ),
    { now: true },
  );

  return {
    worker,
    async close() {
      stopping.abort();
      await looking.stop();
      await worker.close();
      await queue.close();
    },
  };
}
