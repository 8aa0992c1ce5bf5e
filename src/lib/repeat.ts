/**
 * Runs `run` every `everyMs` (and at once with `now`), never two at a time: a tick that finds
 * the last run still going is skipped. The timer does not keep the process alive; `stop` waits
 * for the run under way. `run` handles its own failures.
 */
export function repeatEvery(
  everyMs: number,
  run: () => Promise<void>,
  options: { now?: boolean } = {},
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  const tick = () => {
    running ??= run().finally(() => {
      running = null;
    });
  };
  if (options.now) tick();
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
