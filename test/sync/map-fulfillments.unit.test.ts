import { describe, expect, it } from "vitest";
import type { ShopifyFulfillmentId, ShopifyLocationId } from "../../src/sync/index.ts";
import { mapOrder } from "../../src/sync/index.ts";
import { mapOk, shopSettings, sourceFulfillment, sourceOrder } from "./factories.ts";

const fulfillmentsOf = (
  overrides: Parameters<typeof sourceFulfillment>[0][],
  settings = shopSettings(),
) =>
  mapOk(sourceOrder({ fulfillments: overrides.map((f) => sourceFulfillment(f)) }), settings)
    .fulfillments;
const location = (id: string) => id as ShopifyLocationId;

describe("mapOrder: fulfillments", () => {
  it("sends a shipped fulfillment with its mapped location, tracking and dates", () => {
    expect(fulfillmentsOf([{}])).toEqual([
      {
        sourceFulfillmentId: "6001",
        fulfillmentLocationId: 7,
        trackingInfoCompany: "UPS",
        trackingInfoNumber: "1Z999",
        trackingInfoUrl: "https://www.ups.com/track?tracknum=1Z999",
        shipmentStatus: "in_transit",
        inTransitOn: "2026-11-02T09:00:00-05:00",
        sourceCreatedOn: "2026-11-02T09:00:00-05:00",
      },
    ]);
  });

  it("does not send fulfillments that have not shipped or failed", () => {
    const statuses = ["pending", "open", "error", "failure"];
    expect(
      fulfillmentsOf(
        statuses.map((status, i) => ({ id: `60${i}` as ShopifyFulfillmentId, status })),
      ),
    ).toEqual([]);
  });

  it("marks a delivered fulfillment delivered at its last update", () => {
    const [f] = fulfillmentsOf([
      { shipmentStatus: "delivered", updatedAt: "2026-11-04T15:30:00-05:00" },
    ]);
    expect(f).toMatchObject({
      shipmentStatus: "delivered",
      deliveredOn: "2026-11-04T15:30:00-05:00",
    });
  });

  it("uses the shop's default location for a location that is not mapped", () => {
    const [f] = fulfillmentsOf(
      [{ locationId: location("4040") }],
      shopSettings({ defaultLocationId: 11 }),
    );
    expect(f?.fulfillmentLocationId).toBe(11);
  });

  it("holds back a fulfillment from an unmapped location, telling the merchant which one to map, and sends the rest", () => {
    const result = mapOrder(
      sourceOrder({
        fulfillments: [sourceFulfillment(), sourceFulfillment({ locationId: location("4040") })],
      }),
      shopSettings(),
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.fulfillments).toHaveLength(1);
    expect(result.held).toEqual([
      {
        // The shop's settings can fix it: an operator's error, not the order's.
        kind: "settings",
        field: "fulfillments.1.fulfillmentLocationId",
        message: expect.stringContaining("Shopify location 4040 is not mapped"),
        // The location it points at, for the settings page to name.
        ref: "4040",
      },
    ]);
  });

  it("sends the first tracking number and the first http(s) tracking URL, leaving out others", () => {
    const [f] = fulfillmentsOf([
      {
        trackingCompany: "",
        trackingNumbers: ["", "TRACK-2"],
        trackingUrls: ["javascript:alert(1)", "not a url", "http://track.example/2"],
      },
    ]);
    expect(f).toMatchObject({
      trackingInfoNumber: "TRACK-2",
      trackingInfoUrl: "http://track.example/2",
    });
    expect(f).not.toHaveProperty("trackingInfoCompany");
    const [bare] = fulfillmentsOf([{ trackingUrls: ["ftp://x.example/1"], trackingNumbers: [] }]);
    expect(bare).not.toHaveProperty("trackingInfoUrl");
    expect(bare).not.toHaveProperty("trackingInfoNumber");
  });

  it("maps a cancelled fulfillment with shipment status cancelled, for planSync to replace one already sent", () => {
    const [f] = fulfillmentsOf([{ status: "cancelled", shipmentStatus: "in_transit" }]);
    expect(f?.shipmentStatus).toBe("cancelled");
  });

  it("drops a cancelled fulfillment from an unmapped location without refusing the order", () => {
    expect(fulfillmentsOf([{ status: "cancelled", locationId: location("4040") }])).toEqual([]);
  });
});
