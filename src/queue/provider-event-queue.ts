import { type JobsOptions, Queue } from "bullmq";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { onQueueErrors } from "../lib/redis-wait.ts";
import { QUEUE, queueOptions } from "./names.ts";

/** One stored provider event to process (its row in provider_events). */
export interface ProviderEventJobData {
  eventRowId: number;
  /** When the delivery was received (epoch ms). */
  receivedAt: number;
}

/** The job name of a stored provider event on its queue. */
export const PROVIDER_EVENT_JOB = "provider-event";
/** A stored event's job: one per row, so a second add is a no-op. */
const jobIdOf = (eventRowId: number) => `provider-event-${eventRowId}`;

/**
 * Transient failures (the database, Shopify's Admin API while tagging) are retried with
 * backoff over about an hour; the event stays stored and unprocessed if they all fail.
 */
export const PROVIDER_EVENT_JOB_OPTIONS: JobsOptions = {
  attempts: 10,
  backoff: { type: "exponential", delay: 2_000, jitter: 0.5 },
  removeOnComplete: { age: 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/** The queue of provider events, one job per stored event (its job ID: a second add is a no-op). */
export class ProviderEventQueue {
  readonly queue: Queue<ProviderEventJobData>;

  constructor(connection: RedisConnection, prefix: string) {
    this.queue = new Queue<ProviderEventJobData>(
      QUEUE.providerEvents,
      queueOptions(connection, prefix),
    );
    // A lost connection surfaces as a refused add (the route answers 503), not as an event.
    onQueueErrors(this.queue);
  }

  async enqueue(eventRowId: number, options: JobsOptions = {}): Promise<void> {
    await this.queue.add(
      PROVIDER_EVENT_JOB,
      { eventRowId, receivedAt: Date.now() },
      { ...PROVIDER_EVENT_JOB_OPTIONS, ...options, jobId: jobIdOf(eventRowId) },
    );
  }

  /** Queues a stored event whose job is gone (Redis lost it); answers whether it had to. */
  async enqueueIfLost(eventRowId: number): Promise<boolean> {
    if (await this.queue.getJob(jobIdOf(eventRowId))) return false;
    await this.enqueue(eventRowId);
    return true;
  }

  /**
   * Queues a stored event again (its delivery came back before it was processed): a job that
   * failed every attempt is retried, a missing one added, a waiting or active one left alone.
   */
  async requeue(eventRowId: number): Promise<void> {
    const job = await this.queue.getJob(jobIdOf(eventRowId));
    if (!job) return this.enqueue(eventRowId);
    if (await job.isFailed()) await job.retry("failed");
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
