import { createHash } from "node:crypto";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SecretBox } from "../lib/secret-box.ts";
import { ProviderClient } from "./client.ts";
import {
  ProviderAuthError,
  ProviderConnectionError,
  ProviderError,
  ProviderNotFoundError,
  ProviderRateLimitError,
} from "./errors.ts";

/** A store the token covers, as GET /stores/{storeId} describes it. */
export interface VerifiedStore {
  storeId: number;
  currencyCode: string | null;
  ianaTimezone: string | null;
  /** Set when the token lists the store but reading it failed. */
  problem: string | null;
}

/** Why a check failed: only "credentials" is about the values given. */
export type VerificationFailure =
  | "credentials"
  | "no-stores"
  | "unreachable"
  | "busy"
  | "provider-error";

export type VerificationResult =
  | { ok: true; stores: VerifiedStore[] }
  | {
      ok: false;
      reason: VerificationFailure;
      /** For the merchant, in words. */
      message: string;
    };

export interface VerifyOptions {
  baseUrl: string;
  authUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  environment: string;
  redis: RedisConnection;
  /** Seals the token the check obtains while it sits in Redis. */
  secrets: SecretBox;
  prefix: string;
  fetch?: typeof fetch;
}

/** Reading more stores than this for one page view would spend the provider budget. */
const MAX_STORES = 20;

/**
 * Checks provider credentials the way the connector will use them: a client-credentials token
 * request, then GET /stores/{storeId} for each store in the token's `store_id` claim. Nothing is
 * stored; the caller saves the credentials only when this says they work.
 *
 * The token cache is keyed by a hash of this exact secret, so a cached token obtained with the
 * right secret never vouches for a wrong one typed later.
 */
export async function verifyProviderCredentials(
  options: VerifyOptions,
): Promise<VerificationResult> {
  const secretTag = createHash("sha256")
    .update(`${options.clientId}\n${options.clientSecret}`)
    .digest("hex")
    .slice(0, 16);
  const client = new ProviderClient({
    baseUrl: options.baseUrl,
    authUrl: options.authUrl,
    audience: options.audience,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    redis: options.redis,
    secrets: options.secrets,
    redisPrefix: `${options.prefix}:verify:${secretTag}`,
    timeoutMs: 8_000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  let storeIds: number[];
  try {
    storeIds = (await client.getTokenInfo()).storeIds;
  } catch (error) {
    return failure(error, options.environment);
  }
  if (storeIds.length === 0) {
    return {
      ok: false,
      reason: "no-stores",
      message: `These credentials work, but they do not give access to any store in the ${options.environment} environment. Ask the provider to link your store to this client ID.`,
    };
  }
  const stores: VerifiedStore[] = [];
  for (const storeId of storeIds.slice(0, MAX_STORES)) {
    try {
      const store = await client.getStore(storeId);
      stores.push({
        storeId,
        currencyCode: store.currencyCode,
        ianaTimezone: store.ianaTimezone,
        problem: null,
      });
    } catch (error) {
      if (error instanceof ProviderAuthError || error instanceof ProviderNotFoundError) {
        stores.push({
          storeId,
          currencyCode: null,
          ianaTimezone: null,
          problem: "the provider does not let these credentials read this store",
        });
        continue;
      }
      return failure(error, options.environment);
    }
  }
  return { ok: true, stores };
}

function failure(error: unknown, environment: string): VerificationResult {
  if (error instanceof ProviderAuthError) {
    return {
      ok: false,
      reason: "credentials",
      message: `The provider did not accept this client ID and secret for the ${environment} environment. Check both values (and the environment) in your provider account, then try again.`,
    };
  }
  if (error instanceof ProviderRateLimitError) {
    return {
      ok: false,
      reason: "busy",
      message: "The provider asked us to slow down. Wait a minute and try again.",
    };
  }
  if (error instanceof ProviderConnectionError) {
    return {
      ok: false,
      reason: "unreachable",
      message: `The provider's ${environment} environment could not be reached. Try again in a few minutes.`,
    };
  }
  if (error instanceof ProviderError) {
    return {
      ok: false,
      reason: "provider-error",
      message: `The provider answered with an error (${error.status ?? "no status"}). Try again in a few minutes.`,
    };
  }
  throw error;
}
