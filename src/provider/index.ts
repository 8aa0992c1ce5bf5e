export { ProviderClient, type ProviderClientOptions, type ResponseInfo } from "./client.ts";
export * from "./errors.ts";
export {
  parseRateLimitHeaders,
  parseRetryAfter,
  type RateLimitInfo,
} from "./rate-limit-headers.ts";
export * from "./schemas.ts";
export { readClaims, type TokenInfo, TokenSource, type TokenSourceOptions } from "./token-cache.ts";
