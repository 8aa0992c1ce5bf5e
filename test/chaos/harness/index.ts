export {
  CHAOS_PROVIDER_SECRET,
  CHAOS_SHOPIFY_SECRET,
  Cluster,
  type ClusterOptions,
} from "./cluster.ts";
export { type DeliveryRecord, deliver, type WebhookEvent } from "./driver.ts";
export type { ScenarioFigures } from "./figures.ts";
export { sleep } from "./processes.ts";
export {
  damagedOutsideWindow,
  type FaultContext,
  runScenario,
  type ScenarioResult,
} from "./run-scenario.ts";
export { CHAOS_SCALE, fulfilledOrdersWorkload, lifecycleWorkload, scaled } from "./workload.ts";
