import { isIP } from "node:net";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";
import type { Logger } from "pino";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { RedisConnection } from "../../lib/redis-keys.ts";

/** Wrong admin tokens one client may present before it is refused for the rest of the window. */
export const LOGIN_FAILURES_ALLOWED = 10;
export const LOGIN_WINDOW_SECONDS = 15 * 60;

/**
 * Throttles guessing of ADMIN_TOKEN, per client address and across every web process (Redis):
 * each wrong token counts, and past LOGIN_FAILURES_ALLOWED in LOGIN_WINDOW_SECONDS the client
 * gets 429 with Retry-After, whatever it presents, until the window has passed. Each failure is
 * logged as a warning with the client's address (never what it presented).
 */
export class LoginGuard {
  readonly #limiter: RateLimiterRedis;
  readonly #logger: Logger;
  readonly #proxyHops: number;

  constructor(options: {
    redis: RedisConnection;
    prefix: string;
    logger: Logger;
    /** TRUST_PROXY: how many reverse proxies stand in front, each appending to X-Forwarded-For. */
    proxyHops?: number;
  }) {
    this.#limiter = new RateLimiterRedis({
      storeClient: options.redis,
      keyPrefix: `${options.prefix}:admin-login`,
      points: LOGIN_FAILURES_ALLOWED,
      duration: LOGIN_WINDOW_SECONDS,
      blockDuration: LOGIN_WINDOW_SECONDS,
    });
    this.#logger = options.logger;
    this.#proxyHops = options.proxyHops ?? 0;
  }

  /**
   * The client's address: the socket's, or behind N trusted proxies the X-Forwarded-For entry N
   * places from the right, the one the outermost proxy added. Entries further left came from the
   * client and are never used; a request that passed fewer proxies takes the leftmost entry
   * there is. An entry that is not an IP address counts as no header.
   */
  client(c: Context): string {
    if (this.#proxyHops > 0) {
      const entries = (c.req.header("x-forwarded-for") ?? "")
        .split(",")
        .map((entry) => entry.trim())
        .filter(Boolean);
      const added = entries[Math.max(0, entries.length - this.#proxyHops)];
      if (added && isIP(added)) return added;
    }
    try {
      return getConnInfo(c).remote.address ?? "unknown";
    } catch {
      // Not served by @hono/node-server (app.request in tests): one shared bucket.
      return "unknown";
    }
  }

  /** Seconds until the client may try again, or 0 when it may try now. */
  async retryAfter(c: Context): Promise<number> {
    const state = await this.#limiter.get(this.client(c));
    if (!state || state.consumedPoints <= LOGIN_FAILURES_ALLOWED) return 0;
    return Math.max(1, Math.ceil(state.msBeforeNext / 1000));
  }

  /** Counts a wrong token; answers the seconds to wait when this one used up the allowance. */
  async failed(c: Context, how: "login form" | "bearer token" | "token link"): Promise<number> {
    const client = this.client(c);
    let attempts = 0;
    let wait = 0;
    try {
      const res = await this.#limiter.consume(client);
      attempts = res.consumedPoints;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      attempts = error.consumedPoints;
      wait = Math.max(1, Math.ceil(error.msBeforeNext / 1000));
    }
    this.#logger.warn(
      { client, how, attempts, ...(wait ? { blockedForSeconds: wait } : {}) },
      "admin login failed: wrong token",
    );
    return wait;
  }
}
