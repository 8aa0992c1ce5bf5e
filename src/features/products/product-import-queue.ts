import { Queue } from "bullmq";
import type { Logger } from "pino";
import type { RedisConnection } from "../../lib/redis-keys.ts";
import { onQueueErrors } from "../../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "../../queue/names.ts";
import type { ShopRecord } from "../../store/index.ts";
import { ImportBusyError, type ImportTarget, type ProductImporter } from "./product-importer.ts";

export interface ProductImportJobData {
  importId: number;
  shop: string;
}

export const productImportJobId = (id: number) => `product-import-${id}`;
/** The job name of a product import on its queue. */
export const PRODUCT_IMPORT_JOB = "product-import";

/**
 * Imports started from the settings page run in the workers: one job per import. A job that
 * stops (the provider down, a worker killed) is tried again and resumes from the rows done.
 */
export class ProductImportQueue {
  readonly queue: Queue<ProductImportJobData>;

  constructor(connection: RedisConnection, prefix: string) {
    this.queue = new Queue<ProductImportJobData>(
      QUEUE.productImport,
      queueOptions(connection, prefix),
    );
    onQueueErrors(this.queue);
  }

  async enqueue(data: ProductImportJobData): Promise<void> {
    await this.queue.add(PRODUCT_IMPORT_JOB, data, {
      jobId: productImportJobId(data.importId),
      attempts: 8,
      backoff: { type: "exponential", delay: 5_000 },
      removeOnComplete: 100,
      removeOnFail: 100,
    });
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}

export interface ProductImportProcessorDeps {
  importer: ProductImporter;
  getShop(shop: string): Promise<ShopRecord | null>;
  targetFor(shop: ShopRecord): ImportTarget;
  logger: Logger;
}

/** Runs one import job; throws (so the queue tries again later) when the run stopped early. */
export function createProductImportProcessor(deps: ProductImportProcessorDeps) {
  return async (job: { data: ProductImportJobData }, signal?: AbortSignal) => {
    const { importId, shop } = job.data;
    const record = await deps.getShop(shop);
    if (!record) {
      deps.logger.warn({ shop, importId }, "product import: the shop is gone; nothing to do");
      return null;
    }
    try {
      const summary = await deps.importer.run(deps.targetFor(record), importId, {
        ...(signal ? { signal } : {}),
      });
      deps.logger.info(
        {
          shop,
          importId,
          created: summary.created,
          updated: summary.updated,
          unchanged: summary.unchanged,
          failed: summary.failed,
        },
        "product import completed",
      );
      return summary;
    } catch (error) {
      if (error instanceof ImportBusyError) {
        deps.logger.info({ shop, importId }, "product import: another import runs; later");
      }
      throw error;
    }
  };
}
