import { createHash, randomUUID } from "node:crypto";
import type { Result } from "ioredis";
import { decodeJwt } from "jose";
import { releaseLock } from "../lib/lock.ts";
import { defineScripts, loadLua } from "../lib/lua.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import { type SecretBox, sealedFor } from "../lib/secret-box.ts";
import {
  errorFromResponse,
  ProviderAuthError,
  ProviderConnectionError,
  ProviderRateLimitError,
} from "./errors.ts";

const TOKEN_SCRIPTS = {
  forgetToken: loadLua(new URL("./lua/", import.meta.url), "forget-token-1"),
};

declare module "ioredis" {
  interface RedisCommander<Context> {
    forgetToken(key: string, tokenHash: string): Result<number, Context>;
  }
}

import { httpClientAttributes, inSpan, markFailed, SpanKind } from "../lib/tracing.ts";
import { TokenResponse } from "./schemas.ts";

export interface TokenInfo {
  token: string;
  /** Epoch ms. */
  expiresAt: number;
  storeIds: number[];
  scopes: string[];
}

export interface TokenSourceOptions {
  authUrl: string;
  clientId: string;
  clientSecret: string;
  audience: string;
  redis: RedisConnection;
  /** Seals the cached token in Redis: a bearer token is a credential. */
  secrets: SecretBox;
  /** Key prefix in Redis (per deployment). */
  prefix?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
  /** Renew when less than this remains (docs/provider-interface.md, 5.8: "several minutes"). */
  renewBeforeMs?: number;
  /** Our own cap on token requests per client (the endpoint is rate-limited too). */
  maxRequestsPerMinute?: number;
}

const RENEW_BEFORE_MS = 5 * 60_000;

/** The token as every process shares it in Redis: sealed, with a hash to invalidate it by. */
interface SharedToken {
  sealed: string;
  tokenHash: string;
}

const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex");
const LOCK_MS = 15_000;

/**
 * Client-credentials tokens cached per (auth URL, client, audience) in Redis, shared by every
 * process: one token request in flight at a time across processes (a Redis lock), renewed when
 * less than five minutes remain, and an in-process copy so most calls cost no round trip.
 */
export class TokenSource {
  readonly #o: Required<Omit<TokenSourceOptions, "fetch">> & { fetch: typeof fetch };
  readonly #key: string;
  #memory: TokenInfo | undefined;
  #inflight: Promise<TokenInfo> | undefined;

  constructor(options: TokenSourceOptions) {
    this.#o = {
      prefix: "connector",
      timeoutMs: 10_000,
      renewBeforeMs: RENEW_BEFORE_MS,
      maxRequestsPerMinute: 6,
      fetch: globalThis.fetch,
      ...options,
    } as Required<Omit<TokenSourceOptions, "fetch">> & { fetch: typeof fetch };
    // The secret never enters a key; the identity is hashed so keys stay short and opaque.
    const id = createHash("sha256")
      .update(`${options.authUrl}\n${options.clientId}\n${options.audience}`)
      .digest("hex")
      .slice(0, 24);
    this.#key = `${this.#o.prefix}:token:${id}`;
  }

  /** A token valid for at least the renewal margin. */
  async get(): Promise<TokenInfo> {
    if (this.#fresh(this.#memory)) return this.#memory as TokenInfo;
    this.#inflight ??= this.#obtain().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  /**
   * Drops the token after the provider refused it (401). Only the token that failed is dropped,
   * so many concurrent 401s for one token cause a single renewal.
   */
  async invalidate(token: string): Promise<void> {
    if (this.#memory?.token === token) this.#memory = undefined;
    defineScripts(this.#o.redis, TOKEN_SCRIPTS);
    await this.#o.redis.forgetToken(this.#key, tokenHash(token));
  }

  #remember(info: TokenInfo): TokenInfo {
    this.#memory = info;
    return info;
  }

  #fresh(info: TokenInfo | undefined): boolean {
    return info !== undefined && info.expiresAt - Date.now() > this.#o.renewBeforeMs;
  }

  async #readShared(): Promise<TokenInfo | undefined> {
    const raw = await this.#o.redis.get(this.#key);
    if (!raw) return undefined;
    let info: TokenInfo;
    try {
      const stored = JSON.parse(raw) as SharedToken;
      info = JSON.parse(
        this.#o.secrets.open(stored.sealed, sealedFor.providerToken(this.#key)),
      ) as TokenInfo;
    } catch {
      // Cached by an earlier version (plain text) or under a retired key: ask for a new one.
      return undefined;
    }
    return this.#fresh(info) ? info : undefined;
  }

  async #obtain(): Promise<TokenInfo> {
    const deadline = Date.now() + LOCK_MS + this.#o.timeoutMs;
    const lockKey = `${this.#key}:lock`;
    const owner = randomUUID();
    while (Date.now() < deadline) {
      const shared = await this.#readShared();
      if (shared) return this.#remember(shared);
      if ((await this.#o.redis.set(lockKey, owner, "PX", LOCK_MS, "NX")) === "OK") {
        try {
          // Another process may have finished between our read and our lock.
          const again = await this.#readShared();
          if (again) return this.#remember(again);
          const info = await this.#request();
          const ttl = Math.max(1, info.expiresAt - Date.now());
          const shared: SharedToken = {
            sealed: this.#o.secrets.seal(JSON.stringify(info), sealedFor.providerToken(this.#key)),
            tokenHash: tokenHash(info.token),
          };
          await this.#o.redis.set(this.#key, JSON.stringify(shared), "PX", ttl);
          return this.#remember(info);
        } finally {
          await releaseLock(this.#o.redis, lockKey, owner);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new ProviderConnectionError(
      "timed out waiting for another process to obtain a provider token",
      {
        method: "POST",
        path: "/oauth/token",
        maybeCommitted: false,
      },
    );
  }

  async #request(): Promise<TokenInfo> {
    await this.#checkOwnLimit();
    const path = "/oauth/token";
    const url = `${this.#o.authUrl.replace(/\/$/, "")}${path}`;
    let response: Response;
    try {
      // Traces on: an HTTP client span, like the API requests' (its body is never recorded).
      response = await inSpan(
        "POST",
        { kind: SpanKind.CLIENT, attributes: httpClientAttributes("POST", url) },
        async (span) => {
          const answer = await this.#o.fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json" },
            body: JSON.stringify({
              grant_type: "client_credentials",
              client_id: this.#o.clientId,
              client_secret: this.#o.clientSecret,
              audience: this.#o.audience,
            }),
            signal: AbortSignal.timeout(this.#o.timeoutMs),
          });
          span.setAttribute("http.response.status_code", answer.status);
          if (answer.status >= 400) markFailed(span, String(answer.status));
          return answer;
        },
      );
    } catch (cause) {
      throw new ProviderConnectionError(`token request failed: ${(cause as Error).message}`, {
        method: "POST",
        path,
        maybeCommitted: false,
        cause,
      });
    }
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep the text
    }
    if (!response.ok) {
      const error = errorFromResponse(response, body, { method: "POST", path });
      // Any refusal at the token endpoint (400/401/403) means our credentials or audience are wrong.
      if ([400, 401, 403].includes(response.status)) {
        throw new ProviderAuthError(
          `the provider refused the client credentials: ${error.message}`,
          {
            status: response.status,
            method: "POST",
            path,
            ...(error.body ? { body: error.body } : {}),
            kind: "invalid_client",
          },
        );
      }
      throw error;
    }
    const parsed = TokenResponse.safeParse(body);
    if (!parsed.success) {
      throw new ProviderConnectionError("token endpoint answered without a usable access_token", {
        status: response.status,
        method: "POST",
        path,
        maybeCommitted: false,
      });
    }
    return {
      token: parsed.data.access_token,
      expiresAt: Date.now() + parsed.data.expires_in * 1000,
      ...readClaims(parsed.data.access_token, parsed.data.scope),
    };
  }

  /** At most maxRequestsPerMinute token requests per client id, across processes. */
  async #checkOwnLimit(): Promise<void> {
    const key = `${this.#key}:requests`;
    const now = Date.now();
    const [, [, count]] = (await this.#o.redis
      .multi()
      .zremrangebyscore(key, 0, now - 60_000)
      .zcard(key)
      .exec()) as [[null, number], [null, number]];
    if (count >= this.#o.maxRequestsPerMinute) {
      const oldest = Number((await this.#o.redis.zrange(key, "0", "0", "WITHSCORES"))[1] ?? now);
      throw new ProviderRateLimitError(
        "too many token requests for this client; waiting before asking again",
        {
          method: "POST",
          path: "/oauth/token",
          retryAfterMs: Math.max(1_000, oldest + 60_000 - now),
        },
      );
    }
    await this.#o.redis
      .multi()
      .zadd(key, now, `${now}:${randomUUID()}`)
      .pexpire(key, 60_000)
      .exec();
  }
}

/** Reads `store_id` and scopes tolerantly (docs/provider-contract.md, Tokens). */
export function readClaims(
  token: string,
  scopeField?: string,
): { storeIds: number[]; scopes: string[] } {
  let claims: Record<string, unknown> = {};
  try {
    claims = decodeJwt(token) as Record<string, unknown>;
  } catch {
    // An opaque token: no claims to read.
  }
  const rawStores = claims.store_id ?? claims.storeId ?? claims.store_ids;
  const storeIds = (Array.isArray(rawStores) ? rawStores : String(rawStores ?? "").split(","))
    .map((v) => Number(String(v).trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
  const rawScopes = claims.scope ?? claims.scp ?? claims.permissions ?? scopeField ?? "";
  const scopes = (
    Array.isArray(rawScopes) ? rawScopes.map(String) : String(rawScopes).split(/\s+/)
  ).filter(Boolean);
  return { storeIds, scopes };
}
