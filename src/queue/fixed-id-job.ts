import type { JobState, Queue } from "bullmq";

/** How a job added under a fixed id stands once it runs nothing any more. */
export type EndedJobState = "unknown" | "completed" | "failed";

/** Whether a job in this state runs nothing any more: gone (Redis lost it), completed or failed. */
export function runsNothing(state: JobState | "unknown"): state is EndedJobState {
  return state === "unknown" || state === "completed" || state === "failed";
}

/**
 * Makes way for a job added under a fixed id (one per backfill, one per import) to be added
 * again: answers how it stood when it runs nothing any more, having removed one that ended (its
 * id would make the next add a no-op), or null while it waits or runs.
 */
export async function freeJobId(queue: Queue, id: string): Promise<EndedJobState | null> {
  const state = await queue.getJobState(id);
  if (!runsNothing(state)) return null;
  if (state !== "unknown") await queue.remove(id);
  return state;
}
