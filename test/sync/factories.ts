import { expect } from "vitest";
import type { ProviderStoreId } from "../../src/provider/schemas.ts";
import {
  type MapResult,
  mapOrder,
  type PlanInput,
  type ShopSettings,
  type SourceOrder,
} from "../../src/sync/index.ts";
import {
  sourceOrder as baseSourceOrder,
  sourceAddress,
  sourceFulfillment,
  sourceLine,
} from "../helpers/source-order-factory.ts";

/**
 * Small valid SourceOrders for the mapping and planning tests (the shared factory in
 * test/helpers); each test overrides what it is about. The default order: one line of
 * 2 × 10.00 with 1.60 tax, 5.00 shipping, total 26.60, in USD, shipped to and billed at a US
 * address, updated five minutes after it was created.
 */
export function sourceOrder(overrides: Partial<SourceOrder> = {}): SourceOrder {
  return baseSourceOrder({ updatedAt: "2026-11-01T10:05:00-05:00", ...overrides });
}

export { sourceAddress, sourceFulfillment, sourceLine };

/** Location 3001 is mapped to provider location 7; there is no default location. */
export function shopSettings(overrides: Partial<ShopSettings> = {}): ShopSettings {
  return {
    storeId: 1001 as ProviderStoreId,
    currency: "USD",
    protectionVariantIds: [],
    locationMap: { "3001": 7 },
    defaultLocationId: null,
    ...overrides,
  };
}

export type Mapped = Extract<MapResult, { ok: true }>;

/** Maps an order the test expects to be sendable; fails the test with the errors otherwise. */
export function mapOk(order: SourceOrder, settings: ShopSettings = shopSettings()): Mapped {
  const result = mapOrder(order, settings);
  if (!result.ok) expect.fail(`expected a sendable order, got ${JSON.stringify(result.errors)}`);
  return result;
}

/** The fields of the errors of an order the test expects to be refused. */
export function mapErrors(order: SourceOrder, settings: ShopSettings = shopSettings()): string[] {
  const result = mapOrder(order, settings);
  if (result.ok) expect.fail("expected the order to be refused, but it mapped");
  return result.errors.map((e) => e.field);
}

/** The planner's input for a mapped order, canceled when the source order is. */
export function planInput(order: SourceOrder, settings: ShopSettings = shopSettings()): PlanInput {
  const mapped = mapOk(order, settings);
  return {
    order: mapped.order,
    fulfillments: mapped.fulfillments,
    canceled: order.cancelledAt ? { reason: order.cancelReason, at: order.cancelledAt } : null,
  };
}
