import type { Logger } from "pino";

/** How often a cause that lasts is summed up in one line. */
export const DIGEST_EVERY_MS = 60_000;
/**
 * How long a cause may stay quiet before it counts as ended without a sync of the shop going
 * through: longer than a minute, as the retries of a shop with few orders come further apart
 * (the backoff doubles), and a cause that returns after it is said again.
 */
export const DIGEST_QUIET_MS = 15 * 60_000;
/**
 * How long a provider's cause must stay away after a sync went through before it counts as
 * ended: the requests sent while it lasted still fail for up to PROVIDER_TIMEOUT_MS (10 s) after
 * the provider recovers, and each would otherwise start the cause again and end it again.
 */
export const DIGEST_SETTLE_MS = 30_000;

/** How a digest's lines name one kind of failure. */
export interface DigestWording {
  /** What fails, as the line's subject: `sync of X.myshopify.com`, `webhooks for X`. */
  subject: string;
  /** The summary's verb: `still failing`, `still dead-lettering`. */
  still: string;
  /** What is counted, plural: `attempts failed`, `orders`, `webhooks`. */
  unit: string;
  /** The counts' field in the line: `attemptsFailed`, `ordersDeadLettered`. */
  field: string;
  /** The level of the cause's first line and of its summaries (the end is at info). */
  level: "warn" | "error";
  /** What ends it, as its last line says: `a sync of the shop went through` (the default). */
  through?: string;
  /** Said in the summaries and at the end, after the counts: where to find what was affected. */
  after?: string;
}

/** A cause that repeats: the same for every attempt, order or request it touches. */
export interface FailureCause {
  /** The shop it is about (a sync of that shop ends it), or "" for every shop (a service). */
  shop: string;
  /** What tells this cause from another of the same shop (class, status, category, fields). */
  signature: string;
  /** A failure of the provider itself: only a provider call that went through ends it. */
  provider?: boolean;
  wording: DigestWording;
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
  /** What the last occurrence said (its cause in words), for the summaries. */
  lastDetail: string;
  /** When a sync went through while it was not yet settled (a provider's cause). */
  recoveredAt?: number | undefined;
}

export interface FailureDigestOptions {
  everyMs?: number;
  quietMs?: number;
  settleMs?: number;
  now?: () => number;
}

/**
 * A process's lines about a failure that repeats, as the Redis and Postgres outage lines
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
  readonly #settleMs: number;
  readonly #now: () => number;
  readonly #episodes = new Map<string, Episode>();
  #timer: NodeJS.Timeout | undefined;

  constructor(logger: Logger, options: FailureDigestOptions = {}) {
    this.#logger = logger;
    this.#everyMs = options.everyMs ?? DIGEST_EVERY_MS;
    this.#quietMs = options.quietMs ?? DIGEST_QUIET_MS;
    this.#settleMs = options.settleMs ?? DIGEST_SETTLE_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Sums up and closes on a timer (not holding the process open); `stop` ends it. */
  start(): this {
    this.#timer ??= setInterval(() => this.tick(), Math.min(this.#everyMs, this.#settleMs));
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
    // A request sent before the recovery failing after it: the same cause, not a new one.
    episode.recoveredAt = undefined;
    episode.lastDetail = detail;
    if (now - episode.reportedAt >= this.#everyMs) this.#summarize(episode, now);
    return false;
  }

  /**
   * A sync (or a request) of `shop` went through: every cause of that shop, and every cause of
   * all shops, has ended; the provider's own only when it called the provider
   * (`providerAnswered`).
   */
  succeeded(shop: string, providerAnswered: boolean): void {
    if (this.#episodes.size === 0) return;
    const now = this.#now();
    for (const [key, episode] of this.#episodes) {
      if (episode.cause.shop !== shop && episode.cause.shop !== "") continue;
      if (episode.cause.provider && !providerAnswered) continue;
      // A provider's cause ends once it has stayed away a while (see DIGEST_SETTLE_MS).
      if (episode.cause.provider && now - episode.lastAt < this.#settleMs) {
        episode.recoveredAt ??= now;
        continue;
      }
      this.#episodes.delete(key);
      this.#end(episode, now, episode.cause.wording.through ?? "a sync of the shop went through");
    }
  }

  /** Sums up every cause that repeated since its last line; closes those quiet for a period. */
  tick(): void {
    const now = this.#now();
    for (const [key, episode] of this.#episodes) {
      if (episode.recoveredAt !== undefined && now - episode.lastAt >= this.#settleMs) {
        this.#episodes.delete(key);
        this.#end(episode, now, episode.cause.wording.through ?? "a sync of the shop went through");
      } else if (episode.recent > 0 && now - episode.reportedAt >= this.#everyMs) {
        this.#summarize(episode, now);
      } else if (episode.recent === 0 && now - episode.lastAt >= this.#quietMs) {
        this.#episodes.delete(key);
        this.#end(episode, now, `none for ${seconds(now - episode.lastAt)} s`);
      }
    }
  }

  #summarize(episode: Episode, now: number): void {
    const { shop, wording } = episode.cause;
    const started = seconds(now - episode.startedAt);
    this.#logger[wording.level](
      {
        ...(shop ? { shop } : {}),
        [wording.field]: episode.recent,
        total: episode.total,
        sinceSeconds: started,
      },
      `${wording.subject} ${wording.still}: ${episode.recent} more ${wording.unit} in the last ${seconds(now - episode.reportedAt)} s (${episode.total} since it started ${started} s ago); last: ${episode.lastDetail}${wording.after ? `; ${wording.after}` : ""}`,
    );
    episode.recent = 0;
    episode.reportedAt = now;
  }

  #end(episode: Episode, now: number, why: string): void {
    const { shop, wording } = episode.cause;
    const lasted = seconds(now - episode.startedAt);
    this.#logger.info(
      { ...(shop ? { shop } : {}), [wording.field]: episode.total, lastedSeconds: lasted },
      `${wording.subject} ${wording.still.replace(/^still /, "no longer ")} (${why}): ${episode.total} ${wording.unit} over ${lasted} s (last: ${episode.lastDetail})${wording.after ? `; ${wording.after}` : ""}`,
    );
  }
}

/**
 * Counts one occurrence of `cause` and answers the level of its own line: the cause's level for
 * the first of its episode (and always without a digest), `debug` for the next ones, which the
 * digest's summaries count.
 */
export function lineLevel(
  digest: FailureDigest | undefined,
  cause: FailureCause,
  detail: string,
): "warn" | "error" | "debug" {
  return (digest?.occurred(cause, detail) ?? true) ? cause.wording.level : "debug";
}

function keyOf(cause: FailureCause): string {
  return `${cause.shop}\u0000${cause.wording.subject}\u0000${cause.wording.unit}\u0000${cause.signature}`;
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}
