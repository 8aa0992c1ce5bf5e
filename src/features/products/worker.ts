import { Worker } from "bullmq";
import { tracedJob } from "../../jobs/traced-job.ts";
import { errorText } from "../../lib/redact.ts";
import { duplicateConnection, type RedisConnection } from "../../lib/redis-keys.ts";
import { onQueueErrors } from "../../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../../queue/names.ts";
import {
  createProductImportProcessor,
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
    (job, _token, signal) =>
      processor(job, signal ? AbortSignal.any([signal, stopping.signal]) : stopping.signal),
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
