export {
  type Decision,
  type LimiterOptions,
  type LimiterState,
  type Priority,
  StoreRateLimiter,
} from "./store-rate-limiter.ts";
