import type { Address } from "../provider/schemas.ts";
import { customerDataWithheld } from "./map-customer.ts";
import type { SourceAddress, SourceOrder } from "./source-order.ts";
import { nonEmpty } from "./text.ts";

/**
 * Whether the order was sold without shipping anything and with no address to ship to: no
 * shipping line, and neither a shipping nor a billing address the provider could take (none at
 * all, or one without a street, city or country, such as a customer known at the counter by a
 * country only), as for a walk-in sale at a shop counter (point of sale). The provider requires
 * both addresses and the connector never invents them; with nothing shipped there is nothing to
 * protect, so such an order is kept out of the provider like a test order, not failed. Not so:
 * - an order with a shipping line: something ships, so a missing address is the order's data to
 *   fix and stays an error (`shippingAddress`);
 * - an order with a usable address (shipped to the billing address when none other);
 * - an order whose customer Shopify withheld (protected customer data): its addresses lack a
 *   street because the app may not read them, which the merchant fixes (`protected-data`).
 * A snapshot stored before `hasShippingLine` was kept counts as having one.
 */
export function soldWithoutShipping(order: SourceOrder): boolean {
  if (order.hasShippingLine !== false) return false;
  const { shippingAddress, billingAddress } = order;
  if (shippingAddress !== null && mapAddress(shippingAddress) !== null) return false;
  if (billingAddress !== null && mapAddress(billingAddress) !== null) return false;
  const anAddress = shippingAddress !== null || billingAddress !== null;
  return !(anAddress && customerDataWithheld(order));
}

/**
 * Both addresses the provider requires. A missing (or unusable) shipping address, as for local
 * pickup or digital goods, is replaced by the billing address, and a missing billing address by
 * the shipping address. Null when neither is usable: the caller's error (`shippingAddress`).
 */
export function mapAddresses(
  order: SourceOrder,
  warnings: string[],
): { billing: Address; shipping: Address } | null {
  const billing = usable(order.billingAddress, "billingAddress", warnings);
  const shipping = usable(order.shippingAddress, "shippingAddress", warnings);
  const either = billing ?? shipping;
  return either === null ? null : { billing: either, shipping: shipping ?? either };
}

function usable(address: SourceAddress | null, field: string, warnings: string[]) {
  if (address === null) return null;
  const mapped = mapAddress(address);
  if (mapped === null) warnings.push(`${field} lacks a street, city or country; not used`);
  return mapped;
}

/**
 * - line1 = address1, else address2; line2 = address2 when both are present.
 * - city as is; countryCode upper-cased, and it must be ISO 3166-1 alpha-2.
 * - stateOrProvinceCode = province code, else province name, else the country code: countries
 *   without provinces (Germany, France…) have none, and the provider requires a value.
 * - postalCode = zip, else "-": countries without postal codes (Hong Kong, UAE…) have none, and
 *   the provider requires a value.
 * - name, firstName, lastName when present; latitude and longitude when in range.
 * Null when street, city or a valid country code is missing: not an address to ship to.
 */
export function mapAddress(address: SourceAddress): Address | null {
  const countryCode = nonEmpty(address.countryCode)?.toUpperCase();
  const address1 = nonEmpty(address.address1);
  const address2 = nonEmpty(address.address2);
  const line1 = address1 ?? address2;
  const city = nonEmpty(address.city);
  if (!countryCode || !/^[A-Z]{2}$/.test(countryCode) || !line1 || !city) return null;
  const name = nonEmpty(address.name);
  const firstName = nonEmpty(address.firstName);
  const lastName = nonEmpty(address.lastName);
  const { latitude, longitude } = address;
  return {
    ...(name ? { name } : {}),
    ...(firstName ? { firstName } : {}),
    ...(lastName ? { lastName } : {}),
    line1,
    ...(address1 && address2 ? { line2: address2 } : {}),
    city,
    stateOrProvinceCode:
      nonEmpty(address.provinceCode) ?? nonEmpty(address.province) ?? countryCode,
    postalCode: nonEmpty(address.zip) ?? "-",
    countryCode,
    ...(latitude !== null && Number.isFinite(latitude) && Math.abs(latitude) <= 90
      ? { latitude }
      : {}),
    ...(longitude !== null && Number.isFinite(longitude) && Math.abs(longitude) <= 180
      ? { longitude }
      : {}),
  };
}
