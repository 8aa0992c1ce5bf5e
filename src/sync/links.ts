import type {
  ProviderFulfillmentId,
  ProviderLineItemId,
  ProviderOrderId,
  ProviderStoreId,
} from "../provider/schemas.ts";

/**
 * What the provider already has for one order, as recorded in SQLite (src/store). Planning
 * compares a mapped order against these links and emits only the difference.
 *
 * Hashes are of the canonical JSON of what was last sent successfully, so an unchanged order
 * plans nothing, and a changed one plans exactly the operations whose body changed.
 */
export interface LineItemLink {
  sourceLineItemId: string;
  lineItemId: ProviderLineItemId;
  /** Hash of the LineItemWrite body that created this provider line item. */
  hash: string;
  /** Set once the provider line item was canceled (it stays in the links as history). */
  canceledAt: string | null;
}

export interface FulfillmentLink {
  sourceFulfillmentId: string;
  fulfillmentId: ProviderFulfillmentId;
  /** Hash of the FulfillmentWrite body last sent. */
  hash: string;
}

export interface OrderLinks {
  storeId: ProviderStoreId;
  sourceOrderId: string;
  orderId: ProviderOrderId;
  /** Hash of the order-level fields (everything but line items) last sent. */
  orderHash: string;
  /** Snapshot version (Shopify updated_at) last synced successfully. */
  syncedVersion: string | null;
  canceledAt: string | null;
  lineItems: LineItemLink[];
  fulfillments: FulfillmentLink[];
}
