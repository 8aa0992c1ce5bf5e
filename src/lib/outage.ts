import type { Logger } from "pino";

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
