import { type ModelOrder, orderPayload } from "./shopify-order-builder.ts";

/** A plain one-line order for the stand-in Shopify, numbered #(1000 + id). */
export function standInOrder(id: number, updatedAt: string, overrides: Partial<ModelOrder> = {}) {
  const model: ModelOrder = {
    id,
    number: 1000 + id,
    email: `buyer${id}@example.com`,
    createdAt: updatedAt,
    updatedAt,
    cancelledAt: null,
    note: null,
    shippingCents: 500,
    taxBps: 800,
    lines: [
      {
        id: id * 10 + 1,
        variantId: 501,
        sku: "TS-1",
        title: "T-shirt",
        price: 1000,
        quantity: 1,
        currentQuantity: 1,
      },
    ],
    fulfillments: [],
    locationId: 4001,
    ...overrides,
  };
  return { model, payload: orderPayload(model) };
}

/**
 * A provider budget the connector and the sandbox agree on, large enough that tests about
 * Shopify-side behaviour never wait for it (the limiter learns a store's budget only from
 * answers within the limit it is configured with).
 */
export const AMPLE_BUDGET = {
  sandbox: { rateLimit: 100_000 },
  env: { PROVIDER_RATE_LIMIT: "100000" },
} as const;
