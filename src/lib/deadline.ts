/** A piece of work that did not finish in time (the work itself may still finish later). */
export class DeadlineError extends Error {
  override name = "DeadlineError";
}

/**
 * Settles as `work` does, or rejects with a DeadlineError after `ms`. One timer for the whole
 * piece of work: the receiver bounds a webhook with it instead of a timer per Redis command
 * (ioredis's `commandTimeout` cost as much CPU as the command itself, BENCHMARKS.md). A failure
 * of `work` after the deadline is already answered, so it is not left unhandled.
 */
export function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what} took longer than ${ms} ms`)), ms);
  });
  work.catch(() => {});
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
