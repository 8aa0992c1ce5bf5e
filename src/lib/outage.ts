import type { Logger } from "pino";
import { ConfigError } from "../config/env.ts";
import { nextPause } from "./backoff.ts";

/** A service a running process needs (Redis, Postgres), as its operator's lines name it. */
export interface WatchedService {
  /** The setting that points at it: REDIS_URL, DATABASE_URL. */
  variable: string;
  /** The server, without credentials. */
  where: string;
  /** What happens while it is away. */
  meanwhile: string;
  /** What the operator does if it stays away. */
  fix: string;
}

/**
 * A running process's lines about a service it lost: one warning when it is lost (the setting,
 * the server, the cause, what happens meanwhile and the fix), one line when it is back with how
 * long it was away. A loss reported again before the service is back says nothing more; so does
 * a return that followed no loss.
 */
export function outageLines(logger: Logger, service: WatchedService) {
  const { variable, where } = service;
  let lostAt: number | undefined;
  return {
    lost(cause: string): void {
      if (lostAt !== undefined) return;
      lostAt = Date.now();
      logger.warn(
        `${variable} ${where} is unreachable (${cause}): ${service.meanwhile}; if it stays away, ${service.fix}`,
      );
    },
    back(): void {
      if (lostAt === undefined) return;
      logger.info(
        `${variable} ${where} is reachable again after ${Math.round((Date.now() - lostAt) / 1000)} s`,
      );
      lostAt = undefined;
    },
  };
}

/**
 * Waits at start-up until `attempt` finds the service answering (it resolves null; else it gives
 * the reason), trying again with a growing pause (0.5 s doubling to 15 s, the last one cut so
 * that the last attempt falls on `giveUpAfterMs`) and one warning line per attempt that names
 * the setting. With `giveUpAfterMs` it then stops with one line, the fix in it; without, it
 * waits as long as it takes.
 */
export async function waitUntilReachable(
  service: Pick<WatchedService, "variable" | "where"> & { startFix: string },
  attempt: () => Promise<string | null>,
  options: { logger: Logger; giveUpAfterMs?: number },
): Promise<void> {
  const { variable, where } = service;
  const started = Date.now();
  let pause = 500;
  for (let tries = 1; ; tries++) {
    const reason = await attempt();
    if (reason === null) return;
    const waited = Date.now() - started;
    const wait = nextPause(waited, pause, options.giveUpAfterMs);
    if (wait === null) {
      throw new ConfigError(
        `${variable} ${where} is unreachable (${reason}) after ${Math.round(waited / 1000)} s: ${service.startFix}`,
      );
    }
    options.logger.warn(
      `${variable} ${where} is unreachable (${reason}); attempt ${tries}, trying again in ${wait / 1000} s`,
    );
    await new Promise((resolve) => setTimeout(resolve, wait));
    pause = Math.min(pause * 2, 15_000);
  }
}
