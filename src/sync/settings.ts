import type { ProviderStoreId } from "../provider/schemas.ts";

/** What mapping needs to know about a shop besides the order itself. */
export interface ShopSettings {
  storeId: ProviderStoreId;
  /** The provider store's currency: every money value must be in it. */
  currency: string;
  /** Shopify variant IDs of the shipping-protection product. */
  protectionVariantIds: string[];
  /** Shopify location ID → provider fulfillmentLocationId. */
  locationMap: Record<string, number>;
  /** Used for a Shopify location that has no entry in locationMap. */
  defaultLocationId: number | null;
}
