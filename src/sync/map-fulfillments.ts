import { checkWrite, FulfillmentWrite } from "../provider/schemas.ts";
import type { MapError } from "./map-result.ts";
import type { ShopSettings } from "./settings.ts";
import type { SourceFulfillment } from "./source-order.ts";
import { nonEmpty } from "./text.ts";

/**
 * Shopify fulfillments → provider fulfillment bodies.
 *
 * - Only `success` fulfillments (shipped) are sent; `pending` and `open` have not shipped yet,
 *   `error` and `failure` never did.
 * - A `cancelled` one is mapped with shipmentStatus "cancelled": the provider has no fulfillment
 *   delete, so planSync sends it only to replace one the provider already has, and never creates
 *   it. A cancelled one whose location is not mapped is dropped without an error: it cannot
 *   block the order.
 * - fulfillmentLocationId: the shop's location map, else its default location; otherwise an
 *   error at `fulfillments.<i>.fulfillmentLocationId` telling the merchant which location to map
 *   (a configuration error).
 * - trackingInfoCompany, the first tracking number, the first tracking URL that is a valid
 *   http(s) URL (others are left out); shipmentStatus = Shopify's shipment_status;
 *   inTransitOn and sourceCreatedOn = created; deliveredOn = last update when delivered.
 */
export function mapFulfillments(
  fulfillments: SourceFulfillment[],
  settings: ShopSettings,
  errors: MapError[],
): FulfillmentWrite[] {
  const out: FulfillmentWrite[] = [];
  fulfillments.forEach((f, i) => {
    const cancelled = f.status === "cancelled";
    if (f.status !== "success" && !cancelled) return;
    const location =
      (f.locationId !== null ? settings.locationMap[f.locationId] : undefined) ??
      settings.defaultLocationId;
    if (location === null || location === undefined) {
      if (cancelled) return;
      errors.push({
        kind: "settings",
        field: `fulfillments.${i}.fulfillmentLocationId`,
        message:
          f.locationId === null
            ? "the fulfillment has no Shopify location and the shop has no default provider location; set one in the settings"
            : `Shopify location ${f.locationId} is not mapped to a provider fulfillment location; map it in the settings`,
        ...(f.locationId !== null ? { ref: f.locationId } : {}),
      });
      return;
    }
    const company = nonEmpty(f.trackingCompany);
    const trackingNumber = f.trackingNumbers.map(nonEmpty).find((n) => n !== null);
    const url = f.trackingUrls.map(nonEmpty).find((u) => u !== null && isWebUrl(u));
    const shipmentStatus = cancelled ? "cancelled" : nonEmpty(f.shipmentStatus);
    const body = {
      sourceFulfillmentId: f.id,
      fulfillmentLocationId: location,
      ...(company ? { trackingInfoCompany: company } : {}),
      ...(trackingNumber ? { trackingInfoNumber: trackingNumber } : {}),
      ...(url ? { trackingInfoUrl: url } : {}),
      ...(shipmentStatus ? { shipmentStatus } : {}),
      inTransitOn: f.createdAt,
      ...(f.shipmentStatus === "delivered" ? { deliveredOn: f.updatedAt } : {}),
      sourceCreatedOn: f.createdAt,
    };
    const checked = checkWrite(FulfillmentWrite, body);
    if (checked.success) out.push(checked.data);
    else {
      for (const issue of checked.error.issues) {
        errors.push({
          kind: "order",
          field: ["fulfillments", i, ...issue.path].map(String).join("."),
          message: issue.message,
        });
      }
    }
  });
  return out;
}

/** The provider takes any URL; a tracking link the customer can open must be http(s). */
function isWebUrl(text: string): boolean {
  return (
    /^https?:\/\//i.test(text) && FulfillmentWrite.shape.trackingInfoUrl.safeParse(text).success
  );
}
