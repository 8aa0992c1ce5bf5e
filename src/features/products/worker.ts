import { Worker } from "bullmq";
import { knownKindsOnly } from "../../jobs/job-kinds.ts";
import { tracedJob } from "../../jobs/traced-job.ts";
import { errorText } from "../../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../../lib/redis-keys.ts";
import { onQueueErrors } from "../../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../../queue/names.ts";
import {
  createProductImportProcessor,
  PRODUCT_IMPORT_JOB,
  type ProductImportJobData,
  type ProductImportProcessorDeps,
} from "./index.ts";

export interface ProductImportWorkerDeps extends ProductImportProcessorDeps {
  redis: RedisConnection;
  prefix: string;
}

/** The worker of settings-page product imports: one at a time per process, paced per store. */
export function startProductImportWorker(ctx: ProductImportWorkerDeps) {
  const stopping = new AbortController();
  const processor = tracedJob(createProductImportProcessor(ctx));
  const worker = new Worker<ProductImportJobData>(
    QUEUE.productImport,
    knownKindsOnly(
      QUEUE.productImport,
      [PRODUCT_IMPORT_JOB],
      (job, _token, signal?: AbortSignal) =>
        processor(job, signal ? AbortSignal.any([signal, stopping.signal]) : stopping.signal),
      { logger: ctx.logger.child({ component: "product-import-worker" }) },
    ),
    {
      ...queueOptions(duplicateConnection(ctx.redis), ctx.prefix),
      concurrency: 1,
      // A killed worker's import returns to the queue after this and resumes from its rows.
      lockDuration: 60_000,
    },
  );
  onQueueErrors(worker, (error) =>
    ctx.logger.error({ err: { message: errorText(error) } }, "product import worker error"),
  );
  return {
    worker,
    async close() {
      stopping.abort();
      await worker.close();
    },
  };
}
