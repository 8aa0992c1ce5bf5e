export type { FailureCategory, FailureField, FailureRecord } from "./failure.ts";
export { FAILURE_CATEGORIES } from "./failure.ts";
export { canonicalHash, canonicalJson, sameJson } from "./hash.ts";
export type { FulfillmentLink, LineItemLink, OrderLinks } from "./links.ts";
export { soldWithoutShipping } from "./map-address.ts";
export { customerDataWithheld, guestId, PROTECTED_DATA_REASON } from "./map-customer.ts";
export { mapOrder } from "./map-order.ts";
export type { MapError, MapResult } from "./map-result.ts";
export {
  fulfillmentHashOf,
  lineHashOf,
  orderHashOf,
  orderLevel,
  type PlanInput,
  planSync,
  type SyncOp,
} from "./plan.ts";
export type { ShopSettings } from "./settings.ts";
export * from "./source-order.ts";
