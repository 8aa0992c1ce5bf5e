export {
  type BackfillProcessorDeps,
  type BackfillResult,
  createBackfillProcessor,
} from "./backfill-processor.ts";
export {
  type BackfillProgress,
  progressOf,
  RECENT_ORDERS_DAYS,
  sixtyDayWarning,
} from "./backfill-progress.ts";
export {
  BACKFILL_JOB,
  type BackfillJobData,
  BackfillQueue,
  backfillJobId,
} from "./backfill-queue.ts";
export {
  type BackfillRecord,
  BackfillRepository,
  type BackfillStatus,
} from "./backfill-repository.ts";
export { CheckpointRepository } from "./checkpoint-repository.ts";
export {
  type FeedResult,
  feedOrders,
  type OrderFeederDeps,
  ShopNotConfiguredError,
} from "./order-feeder.ts";
export {
  createSweepProcessor,
  LOST_LOOKBACK_MS,
  OWED_HOLD_MAX_MS,
  PRUNE_SCHEDULER_ID,
  RedisLossMarks,
  SWEEP_JOB,
  type SweepDeps,
  type SweepJobData,
  type SweepResult,
  SweepScheduler,
  staleReason,
  sweepSchedulerId,
  sweepShop,
} from "./reconcile-sweep.ts";
export {
  parseInstant,
  type ResyncDeps,
  ResyncInputError,
  type ResyncResult,
  type ResyncTarget,
  resync,
} from "./resync.ts";
export { WINDOW_OBJECTS } from "./windowed-pager.ts";
