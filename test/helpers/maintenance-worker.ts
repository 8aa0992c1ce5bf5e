import { type SweepWorkerHandle, startSweepWorker } from "../../src/jobs/sweep-worker.ts";

export interface MaintenanceWorker {
  handle: SweepWorkerHandle;
  /** Stops the worker; a second call does nothing. */
  close(): Promise<void>;
}

/**
 * The worker role's maintenance worker (sweeps, bulk retries, what waited for a shop's token),
 * its close handed to `closeLater` for the test's teardown, and safe to call before it.
 */
export async function maintenanceWorker(
  ctx: Parameters<typeof startSweepWorker>[0],
  closeLater: (close: () => Promise<void>) => void,
): Promise<MaintenanceWorker> {
  const handle = await startSweepWorker(ctx);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  closeLater(close);
  return { handle, close };
}
