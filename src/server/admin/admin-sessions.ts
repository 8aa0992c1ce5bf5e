import { createHash, createHmac, randomBytes } from "node:crypto";
import type { RedisConnection } from "../../lib/redis-keys.ts";

/** How long a browser login lasts. */
export const ADMIN_SESSION_MS = 12 * 3600_000;

/** A session ID as the cookie carries it: 32 random bytes, base64url. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

/**
 * The admin area's browser sessions, kept in Redis so that they can end before they expire: the
 * cookie holds a random session ID, Redis holds (under the ID's SHA-256, so a read of Redis
 * yields no usable cookie) a fingerprint of the ADMIN_TOKEN it was opened with, for 12 hours.
 * Logging out deletes the session at once; a session opened under another ADMIN_TOKEN no longer
 * matches, so changing the token ends every session. Every web process shares them.
 */
export class AdminSessions {
  readonly #redis: RedisConnection;
  readonly #prefix: string;
  readonly #ttlMs: number;

  constructor(options: { redis: RedisConnection; prefix: string; ttlMs?: number }) {
    this.#redis = options.redis;
    this.#prefix = options.prefix;
    this.#ttlMs = options.ttlMs ?? ADMIN_SESSION_MS;
  }

  get ttlMs(): number {
    return this.#ttlMs;
  }

  #key(id: string): string {
    return `${this.#prefix}:admin-session:${createHash("sha256").update(id).digest("base64url")}`;
  }

  /** Opens a session for whoever presented `token`; answers the ID the cookie carries. */
  async start(token: string): Promise<string> {
    const id = randomBytes(32).toString("base64url");
    await this.#redis.set(this.#key(id), fingerprint(token), "PX", this.#ttlMs);
    return id;
  }

  /** Whether `id` names a live session opened under `token` (the ADMIN_TOKEN now configured). */
  async valid(id: string | undefined, token: string): Promise<boolean> {
    if (!id || !SESSION_ID.test(id)) return false;
    return (await this.#redis.get(this.#key(id))) === fingerprint(token);
  }

  /** Ends a session now (logout). An unknown or malformed ID is ignored. */
  async end(id: string | undefined): Promise<void> {
    if (id && SESSION_ID.test(id)) await this.#redis.del(this.#key(id));
  }
}

/** What a session remembers of its token: an HMAC under the token, never the token itself. */
function fingerprint(token: string): string {
  return createHmac("sha256", token).update("connector admin session v2").digest("base64url");
}
