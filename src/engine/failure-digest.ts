import type { Logger } from "pino";

/** How often a cause that lasts is summed up in one line. */
export const DIGEST_EVERY_MS = 60_000;
/**
 * How long a cause may stay quiet before it counts as ended without a sync of the shop going
 * through: longer than a minute, as the retries of a shop with few orders come further apart
 * (the backoff doubles), and a cause that returns after it is said again.
 */
export const DIGEST_QUIET_MS = 15 * 60_000;

/** What a failed attempt or a dead letter says about its cause, the same for every order. */
export interface FailureCause {
  shop: string;
  /** `retry`: an attempt that will be retried; `dead`: an order dead-lettered. */
  kind: "retry" | "dead";
  /** What tells this cause from another of the same shop (class, status, category, fields). */
  signature: string;
  /** A failure of the provider itself: only a provider call that went through ends it. */
  provider?: boolean;
}

interface Episode {
  cause: FailureCause;
  startedAt: number;
  /** When the last line about it was written (its first line, or the last summary). */
  reportedAt: number;
  lastAt: number;
  total: number;
  /** Since the last line. */
  recent: number;
  /** Orders dead-lettered (kind `dead`), or attempts (kind `retry`). */
  lastDetail: string;
}

export interface FailureDigestOptions {
  everyMs?: number;
  quietMs?: number;
  now?: () => number;
}

/**
 * The sync worker's lines about a failure that repeats, as the Redis and Postgres outage lines
 * do it (src/lib/outage.ts): one line when a cause starts for a shop (the cause and the fix), one
 * summary a minute while it lasts (how many attempts failed, how many orders were
 * dead-lettered), and one line when it ends (a sync of the shop went through, or 15 minutes
 * passed without the cause). Each attempt and each order keeps its own line at `debug`; the
 * order's detail is in its dead-letter record and `connector orders show`. Without this, a
 * provider answering 500 for an hour wrote one warning per attempt: at 100 attempts a second,
 * 360,000 lines an hour saying the same thing.
 */
export class FailureDigest {
  readonly #logger: Logger;
  readonly #everyMs: number;
  readonly #quietMs: number;
  readonly #now: () => number;
  readonly #episodes = new Map<string, Episode>();
  #timer: NodeJS.Timeout | undefined;

  constructor(logger: Logger, options: FailureDigestOptions = {}) {
    this.#logger = logger;
    this.#everyMs = options.everyMs ?? DIGEST_EVERY_MS;
    this.#quietMs = options.quietMs ?? DIGEST_QUIET_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Sums up and closes on a timer (not holding the process open); `stop` ends it. */
  start(): this {
    this.#timer ??= setInterval(() => this.tick(), this.#everyMs);
    this.#timer.unref();
    return this;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Counts one occurrence of `cause`. Returns true when it is the first of its episode: the
   * caller then writes its line at its own level (with the cause and the fix); otherwise the
   * caller writes it at `debug`, and the counts come in the next summary.
   */
  occurred(cause: FailureCause, detail: string): boolean {
    const key = keyOf(cause);
    const now = this.#now();
    const episode = this.#episodes.get(key);
    if (!episode) {
      this.#episodes.set(key, {
        cause,
        startedAt: now,
        reportedAt: now,
        lastAt: now,
        total: 1,
        recent: 0,
        lastDetail: detail,
      });
      return true;
    }
    episode.total++;
    episode.recent++;
    episode.lastAt = now;
    episode.lastDetail = detail;
    if (now - episode.reportedAt >= this.#everyMs) this.#summarize(episode, now);
    return false;
  }

  /**
   * A sync of `shop` went through: every cause of that shop has ended, the provider's own only
   * when the sync called the provider (`providerAnswered`).
   */
  succeeded(shop: string, providerAnswered: boolean): void {
    if (this.#episodes.size === 0) return;
    const now = this.#now();
    for (const [key, episode] of this.#episodes) {
      if (episode.cause.shop !== shop) continue;
      if (episode.cause.provider && !providerAnswered) continue;
      this.#episodes.delete(key);
      this.#end(episode, now, "a sync of the shop went through");
    }
  }

  /** Sums up every cause that repeated since its last line; closes those quiet for a period. */
  tick(): void {
    const now = this.#now();
    for (const [key, episode] of this.#episodes) {
      if (episode.recent > 0 && now - episode.reportedAt >= this.#everyMs) {
        this.#summarize(episode, now);
      } else if (episode.recent === 0 && now - episode.lastAt >= this.#quietMs) {
        this.#episodes.delete(key);
        this.#end(episode, now, `none for ${seconds(now - episode.lastAt)} s`);
      }
    }
  }

  #summarize(episode: Episode, now: number): void {
    const { shop, kind } = episode.cause;
    const fields = {
      shop,
      [kind === "retry" ? "attemptsFailed" : "ordersDeadLettered"]: episode.recent,
      total: episode.total,
      sinceSeconds: seconds(now - episode.startedAt),
    };
    const since = `${seconds(now - episode.reportedAt)} s`;
    if (kind === "retry") {
      this.#logger.warn(
        fields,
        `sync of ${shop} still failing: ${episode.recent} more attempts failed in the last ${since} (${episode.total} since it started ${seconds(now - episode.startedAt)} s ago); last: ${episode.lastDetail}`,
      );
    } else {
      this.#logger.error(
        fields,
        `sync of ${shop} still dead-lettering: ${episode.recent} more orders in the last ${since} for the same cause (${episode.total} since it started ${seconds(now - episode.startedAt)} s ago): ${episode.lastDetail}`,
      );
    }
    episode.recent = 0;
    episode.reportedAt = now;
  }

  #end(episode: Episode, now: number, why: string): void {
    const { shop, kind } = episode.cause;
    const lasted = seconds(now - episode.startedAt);
    this.#logger.info(
      {
        shop,
        [kind === "retry" ? "attemptsFailed" : "ordersDeadLettered"]: episode.total,
        lastedSeconds: lasted,
      },
      kind === "retry"
        ? `sync of ${shop} no longer failing (${why}): ${episode.total} attempts failed over ${lasted} s (${episode.lastDetail})`
        : `sync of ${shop} no longer dead-lettering (${why}): ${episode.total} orders dead-lettered over ${lasted} s (${episode.lastDetail}); \`npx connector dlq list --shop ${shop}\` lists them`,
    );
  }
}

function keyOf(cause: FailureCause): string {
  return `${cause.shop}\u0000${cause.kind}\u0000${cause.signature}`;
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}
