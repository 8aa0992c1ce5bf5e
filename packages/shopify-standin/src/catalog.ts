/**
 * What the settings page reads from a shop besides orders: the shop's currency, its products
 * and variants (to pick the shipping-protection variant) and its locations (to map to the
 * provider's fulfillment locations). Numeric IDs, as Shopify's REST payloads carry them.
 */
export interface StandInVariant {
  id: number;
  title: string;
  sku: string | null;
  price: string;
}

export interface StandInProduct {
  id: number;
  title: string;
  /** Unique in the shop; Shopify derives it from the title when none is given (handleOf). */
  handle?: string;
  status: "ACTIVE" | "ARCHIVED" | "DRAFT";
  variants: StandInVariant[];
}

export interface StandInLocation {
  id: number;
  name: string;
  isActive: boolean;
}

export interface StandInCatalog {
  name: string;
  currencyCode: string;
  ianaTimezone: string;
  products: StandInProduct[];
  locations: StandInLocation[];
}

/** A small shop that looks like a real one: a protection product among ordinary ones. */
export function defaultCatalog(domain: string): StandInCatalog {
  return {
    name: domain.replace(/\.myshopify\.com$/, ""),
    currencyCode: "USD",
    ianaTimezone: "America/New_York",
    products: [
      {
        id: 7001,
        title: "Shipping protection",
        handle: "shipping-protection",
        status: "ACTIVE",
        variants: [
          { id: 999, title: "Standard", sku: "PROTECT-STD", price: "2.50" },
          { id: 998, title: "Premium", sku: "PROTECT-PRM", price: "4.90" },
        ],
      },
      {
        id: 7002,
        title: "Trail running shoes",
        handle: "trail-running-shoes",
        status: "ACTIVE",
        variants: [
          { id: 5001, title: "42", sku: "TRAIL-42", price: "129.00" },
          { id: 5002, title: "43", sku: "TRAIL-43", price: "129.00" },
        ],
      },
      {
        id: 7003,
        title: "Merino socks",
        handle: "merino-socks",
        status: "ACTIVE",
        variants: [{ id: 5101, title: "Default Title", sku: "SOCK-M", price: "18.00" }],
      },
    ],
    locations: [
      { id: 4001, name: "Main warehouse", isActive: true },
      { id: 4002, name: "Downtown store", isActive: true },
    ],
  };
}

/** A product's handle: its own, or Shopify's default, the title lowercased with dashes. */
export function handleOf(product: StandInProduct): string {
  return (
    product.handle ??
    product.title
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")
  );
}
