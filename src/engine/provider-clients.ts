import type { Logger } from "pino";
import type { ProviderEndpoints } from "../config/env.ts";
import { errorText } from "../lib/redact.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SecretBox } from "../lib/secret-box.ts";
import { sealedFor } from "../lib/secret-box.ts";
import { ProviderClient, type ResponseInfo } from "../provider/index.ts";
import type { ShopRecord } from "../store/index.ts";
import type { StoreRateLimiter } from "./limiter/index.ts";

/** Where a shop's provider lives when its own settings do not say (env, or the sandbox). */
export type { ProviderEndpoints };

export interface ProviderClientsDeps {
  limiter: StoreRateLimiter;
  secrets: SecretBox;
  /** Token cache and the limiter's marks: the jobs' pipelined connection. */
  redis: RedisConnection;
  prefix: string;
  timeoutMs: number;
  production: ProviderEndpoints;
  /** The staging environment's endpoints; production's when absent. */
  staging?: ProviderEndpoints | undefined;
  /** Counts every response (the process's metrics). */
  onResponse(info: ResponseInfo): void;
  logger: Logger;
  /** Lets tests and chaos runs pass a fetch with faults or counters. */
  fetch?: typeof fetch | undefined;
}

/**
 * One provider client per shop, built from its stored credentials, with the limiter's hooks
 * (`limiter.providerHooks`): inside `limiter.call`, a request is marked as sent to the store's
 * budget just before it leaves, and every response teaches the limiter what the provider
 * counts (other clients included). Callers see the whole loop in `limiter.call`.
 */
export class ProviderClients {
  readonly #clients = new Map<string, { version: string; client: ProviderClient }>();

  constructor(private readonly deps: ProviderClientsDeps) {}

  endpoints(environment: "production" | "staging"): ProviderEndpoints {
    return environment === "staging" && this.deps.staging
      ? this.deps.staging
      : this.deps.production;
  }

  /** The shop's client; rebuilt when the shop's settings changed. */
  for(shop: ShopRecord): ProviderClient {
    const cached = this.#clients.get(shop.shop);
    if (cached && cached.version === shop.updatedAt) return cached.client;
    if (!shop.providerClientId || !shop.providerClientSecretSealed) {
      throw new Error(`shop ${shop.shop} has no provider credentials`);
    }
    const { limiter, secrets, logger, production } = this.deps;
    const hooks = limiter.providerHooks();
    const client = new ProviderClient({
      baseUrl: shop.providerBaseUrl ?? production.baseUrl,
      authUrl: shop.providerAuthUrl ?? production.authUrl,
      audience: shop.providerAudience ?? production.audience,
      clientId: shop.providerClientId,
      clientSecret: secrets.open(
        shop.providerClientSecretSealed,
        sealedFor.providerClientSecret(shop.shop),
      ),
      secrets,
      redis: this.deps.redis,
      redisPrefix: this.deps.prefix,
      timeoutMs: this.deps.timeoutMs,
      ...(this.deps.fetch ? { fetch: this.deps.fetch } : {}),
      beforeSend: hooks.beforeSend,
      onResponse: (info) => {
        this.deps.onResponse(info);
        if (info.storeId === undefined) return;
        hooks.answered(info.storeId, info.rateLimit).catch((error: unknown) => {
          logger.warn(
            { err: { message: errorText(error) } },
            "limiter could not learn from a response",
          );
        });
      },
    });
    this.#clients.set(shop.shop, { version: shop.updatedAt, client });
    return client;
  }
}
