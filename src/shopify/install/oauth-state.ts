import type { RedisConnection } from "../../lib/redis-keys.ts";

/** How long an install link stays usable: the library's state cookie lives 60 s. */
const STATE_TTL_SECONDS = 120;

/**
 * The OAuth `state` nonces the connector handed out, kept server-side so each is single-use.
 *
 * `@shopify/shopify-api` already binds the state to a signed cookie of the browser that began
 * the install; this store adds what a cookie cannot: a state is accepted once, for the shop it
 * was issued to, and not after two minutes. A replayed or forged callback finds nothing here.
 */
export class OAuthStateStore {
  readonly #redis: RedisConnection;
  readonly #prefix: string;

  constructor(redis: RedisConnection, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  #key(state: string) {
    return `${this.#prefix}:oauth-state:${state}`;
  }

  async remember(state: string, shop: string): Promise<void> {
    await this.#redis.set(this.#key(state), shop, "EX", STATE_TTL_SECONDS);
  }

  /** Takes the state (GETDEL: a second callback with it finds nothing); true if it was ours. */
  async consume(state: string, shop: string): Promise<boolean> {
    if (!/^[\w-]{1,128}$/.test(state)) return false;
    const issuedFor = await this.#redis.getdel(this.#key(state));
    return issuedFor === shop;
  }
}
