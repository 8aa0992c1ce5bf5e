export {
  type Decision,
  type LimiterInspection,
  type LimiterOptions,
  type Priority,
  StoreRateLimiter,
} from "./store-rate-limiter.ts";
