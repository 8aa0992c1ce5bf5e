export {
  type Decision,
  type LimiterInspection,
  type LimiterOptions,
  type LimiterState,
  type Priority,
  StoreRateLimiter,
} from "./store-rate-limiter.ts";
