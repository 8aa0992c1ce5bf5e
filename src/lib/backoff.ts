/**
 * The pause before the next attempt of a start-up wait (Redis, Postgres): `pause` as the backoff
 * has it, cut to what is left of `giveUpAfterMs`, so the last attempt happens when the wait is
 * up rather than a whole backoff step before it (with 0.5 s doubling to 15 s, a 60 s wait gave
 * up after 45.5 s). Null when the wait is over and the caller should give up.
 */
export function nextPause(waitedMs: number, pause: number, giveUpAfterMs?: number): number | null {
  if (giveUpAfterMs === undefined) return pause;
  const left = giveUpAfterMs - waitedMs;
  return left > 0 ? Math.min(pause, left) : null;
}
