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

/** A command's failure when a service it uses stopped answering while it ran: one line, the fix in it. */
export class ServiceLostError extends Error {
  override name = "ServiceLostError";
}

/** How `whileAnswering` asks a service whether it still answers. */
export interface Heartbeat extends Pick<WatchedService, "variable" | "where" | "fix"> {
  /** Resolves when the service answers (PING, `select 1`); never answering is the loss. */
  ping(): Promise<unknown>;
  /** The connection's last error since the service last answered (ECONNREFUSED), if any. */
  cause?(): string | undefined;
  /** Lets go of what `ping` opened of its own; not awaited (a stopped server never answers). */
  dispose?(): void;
}

/**
 * Settles as `work` does, unless a service it needs stops answering first: each heartbeat is
 * asked every `everyMs` (one question at a time), and one that has left a question unanswered, or
 * failed every one, for `boundMs` ends the wait with a ServiceLostError naming the setting, the
 * server, the cause and the fix. A server that is stopped (SIGSTOP, a frozen VM, a partition)
 * holds its connections open and answers nothing, and a killed one leaves clients that retry for
 * ever: without this, a command that connected would wait as long. `work` goes on unobserved.
 */
export async function whileAnswering<T>(
  work: Promise<T>,
  heartbeats: readonly Heartbeat[],
  options: { boundMs: number; everyMs?: number },
): Promise<T> {
  if (heartbeats.length === 0) return work;
  const { boundMs } = options;
  const everyMs = options.everyMs ?? Math.min(1_000, boundMs / 5);
  let timer: NodeJS.Timeout | undefined;
  const lost = new Promise<never>((_, reject) => {
    const states = heartbeats.map((heartbeat) => ({
      heartbeat,
      asking: false,
      unansweredSince: undefined as number | undefined,
      failure: undefined as string | undefined,
    }));
    const beat = () => {
      const now = Date.now();
      for (const state of states) {
        const { heartbeat } = state;
        if (state.unansweredSince !== undefined && now - state.unansweredSince >= boundMs) {
          clearInterval(timer);
          const cause =
            heartbeat.cause?.() ?? state.failure ?? `no answer within ${boundMs / 1000} s`;
          reject(
            new ServiceLostError(
              `${heartbeat.variable} ${heartbeat.where} stopped answering during the command (${cause}): ${heartbeat.fix}, then run the command again`,
            ),
          );
          return;
        }
        if (state.asking) continue;
        state.asking = true;
        state.unansweredSince ??= now;
        heartbeat.ping().then(
          () => {
            state.unansweredSince = undefined;
            state.failure = undefined;
            state.asking = false;
          },
          (error: NodeJS.ErrnoException) => {
            state.failure = error?.code ?? error?.message;
            state.asking = false;
          },
        );
      }
    };
    timer = setInterval(beat, everyMs);
    beat();
  });
  work.catch(() => {});
  try {
    return await Promise.race([work, lost]);
  } finally {
    clearInterval(timer);
    for (const heartbeat of heartbeats) heartbeat.dispose?.();
  }
}
