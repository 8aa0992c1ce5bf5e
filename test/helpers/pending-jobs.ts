import type { OrderQueues } from "../../src/queue/order-queues.ts";

/** Sync jobs waiting or running in every shard of every shard count still recorded. */
export async function pendingSyncJobs(
  queues: OrderQueues,
  options: { fresh?: boolean } = {},
): Promise<number> {
  let pending = 0;
  for (const queue of await queues.allSyncQueues(options)) {
    const counts = await queue.getJobCounts(
      "waiting",
      "active",
      "delayed",
      "prioritized",
      "waiting-children",
    );
    pending += Object.values(counts).reduce((a, b) => a + b, 0);
  }
  return pending;
}
