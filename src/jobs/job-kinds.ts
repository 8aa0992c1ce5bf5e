import { DelayedError, type Job } from "bullmq";
import type { Logger } from "pino";

/** How long a job of a kind this version does not know waits before a worker looks again. */
export const UNKNOWN_KIND_RETRY_MS = 60_000;

/**
 * A worker's processor that runs only the kinds of job (BullMQ job names) this version knows.
 *
 * During a rolling deploy, workers of two versions take jobs from the same queues. A newer
 * version may queue a kind this one does not know. Run as another kind, or completed without
 * running, that job's work would be lost without a trace: this is how a worker from before
 * "shop-reconnected" completed that job unrun. Here such a job goes back to the delayed set
 * instead, untouched (no attempt counted), and a worker looks at it again after `retryMs`, until
 * one of the version that queued it takes it. Each unknown kind is said once per process, as
 * a warning that names the queue, the kind and the fix.
 */
export function knownKindsOnly<D, R, A extends unknown[]>(
  queue: string,
  kinds: readonly string[],
  processor: (job: Job<D>, token: string | undefined, ...rest: A) => Promise<R>,
  options: { logger: Logger; retryMs?: number },
): (job: Job<D>, token: string | undefined, ...rest: A) => Promise<R> {
  const known = new Set(kinds);
  const said = new Set<string>();
  const retryMs = options.retryMs ?? UNKNOWN_KIND_RETRY_MS;
  return async (job, token, ...rest) => {
    if (known.has(job.name)) return processor(job, token, ...rest);
    if (!said.has(job.name)) {
      said.add(job.name);
      options.logger.warn(
        { queue, kind: job.name, jobId: job.id },
        `a job of a kind this version does not know is left in the ${queue} queue for a newer worker (looked at again every ${Math.round(retryMs / 1000)} s): finish upgrading every worker`,
      );
    }
    await job.moveToDelayed(Date.now() + retryMs, token);
    throw new DelayedError();
  };
}
