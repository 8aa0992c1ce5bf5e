export { canonicalHash, canonicalJson } from "./hash.ts";
export type { FulfillmentLink, LineItemLink, OrderLinks } from "./links.ts";
export { guestId, type MapError, type MapResult, mapOrder } from "./map-order.ts";
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
