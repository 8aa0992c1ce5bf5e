import type { FulfillmentWrite, OrderCreate } from "../provider/schemas.ts";

/**
 * Whose to fix: `settings` — the shop's settings (a currency the provider store does not keep,
 * a Shopify location mapped to no provider location); `customer` — nothing identifies the
 * customer (no email, no phone); `order` — the order's own data.
 */
export type MapErrorKind = "settings" | "customer" | "order";

/** One reason an order cannot be sent, named by the provider body's field path. */
export interface MapError {
  kind: MapErrorKind;
  field: string;
  message: string;
  /** The Shopify ID the field points at, when there is one (an unmapped location). */
  ref?: string;
}

/**
 * The outcome of mapping: a body the provider will accept as far as we can tell, or the list of
 * reasons it would not. Warnings name what was repaired or left out; they never hold customer
 * data (they are logged).
 */
export type MapResult =
  | {
      ok: true;
      order: OrderCreate;
      fulfillments: FulfillmentWrite[];
      /**
       * Fulfillments left out of `fulfillments` until the shop's settings map their location
       * (settings errors at `fulfillments.<i>.fulfillmentLocationId`); the rest is sent.
       */
      held: MapError[];
      /**
       * No line is left (all refunded, removed or restocked): `order.lineItems` holds them at the
       * quantity ordered, to create the order; see PlanInput.
       */
      linesGone: boolean;
      warnings: string[];
    }
  | { ok: false; errors: MapError[] };
