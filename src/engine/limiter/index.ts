export {
  type CallOptions,
  type CallResult,
  type Decision,
  type LimiterInspection,
  type LimiterOptions,
  type Priority,
  type Slot,
  StoreRateLimiter,
  type Wait,
} from "./store-rate-limiter.ts";
