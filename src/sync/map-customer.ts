import { createHash } from "node:crypto";
import {
  type CountryCode,
  isSupportedCountry,
  parsePhoneNumberFromString,
} from "libphonenumber-js";
import { Customer } from "../provider/schemas.ts";
import type { SourceAddress, SourceOrder } from "./source-order.ts";
import { nonEmpty } from "./text.ts";

/**
 * A stable customer id for guest checkouts: `guest:` and the first 16 hex digits of the SHA-256
 * of the lower-cased identity, so the same email always gives the same id and no email is sent
 * in it.
 */
export function guestId(identity: string): string {
  const digest = createHash("sha256").update(identity.trim().toLowerCase()).digest("hex");
  return `guest:${digest.slice(0, 16)}`;
}

/**
 * - sourceCustomerId: Shopify's customer id; for a guest (no customer), guestId of the email,
 *   else the phone (E.164), else the order id.
 * - firstName/lastName: taken together from the first of customer, billing address, shipping
 *   address that has a name (so two people's names are never mixed); "" when none has one.
 * - email: the first of the customer's and the order's email that is a valid address; an invalid
 *   one is left out.
 * - phone: see pickPhone.
 * Neither email nor phone is the caller's error (`customer.email`).
 */
export function mapCustomer(order: SourceOrder, warnings: string[]): Customer {
  const c = order.customer;
  const email = [c?.email, order.email]
    .map(nonEmpty)
    .find((e): e is string => e !== null && Customer.shape.email.safeParse(e).success);
  const phone = pickPhone(order, warnings);
  const named = [c, order.billingAddress, order.shippingAddress].find(
    (p) => p && (nonEmpty(p.firstName) || nonEmpty(p.lastName)),
  );
  return {
    sourceCustomerId: nonEmpty(c?.id) ?? guestId(email ?? phone ?? order.id),
    firstName: nonEmpty(named?.firstName) ?? "",
    lastName: nonEmpty(named?.lastName) ?? "",
    ...(email ? { email } : {}),
    ...(phone ? { phone } : {}),
  };
}

/**
 * The first of customer, order, billing-address and shipping-address phone that
 * libphonenumber-js reads as a valid number, formatted E.164. A local format ("(415) 555-0123")
 * is read in the country of its address (the shipping country for the customer's and order's
 * phones, which have none); a phone that is not a valid number ("555-555-SHIP") is left out with
 * a warning naming where it came from, never its value.
 */
function pickPhone(order: SourceOrder, warnings: string[]): string | undefined {
  const ship = order.shippingAddress;
  const bill = order.billingAddress;
  const orderCountry = countryOf(ship) ?? countryOf(bill);
  const candidates: [string, string | null | undefined, CountryCode | undefined][] = [
    ["customer.phone", order.customer?.phone, orderCountry],
    ["order phone", order.phone, orderCountry],
    ["billing address phone", bill?.phone, countryOf(bill) ?? orderCountry],
    ["shipping address phone", ship?.phone, countryOf(ship) ?? orderCountry],
  ];
  for (const [source, raw, country] of candidates) {
    const text = nonEmpty(raw);
    if (text === null) continue;
    const parsed = parsePhoneNumberFromString(text, country);
    if (parsed?.isValid()) return parsed.number;
    warnings.push(`${source} is not a valid phone number; left out`);
  }
  return undefined;
}

function countryOf(address: SourceAddress | null): CountryCode | undefined {
  const code = nonEmpty(address?.countryCode)?.toUpperCase();
  return code && isSupportedCountry(code) ? code : undefined;
}

/** Why an order whose customer Shopify redacted cannot be sent (dead-letter reason, page text). */
export const PROTECTED_DATA_REASON =
  "protected customer data not approved: Shopify sends this app the order without the customer's name, email, phone and address, and the provider needs an email or a phone";

/**
 * Whether Shopify withheld the customer's protected data (an app not approved for it): no email
 * and no phone anywhere, no name, and addresses without a street. What such an order can give
 * the provider is not enough (the provider needs an email or a phone), so it is dead-lettered
 * with PROTECTED_DATA_REASON instead of a mapping error about a missing email.
 */
export function customerDataWithheld(order: SourceOrder): boolean {
  const c = order.customer;
  const contact = [
    c?.email,
    c?.phone,
    order.email,
    order.phone,
    order.billingAddress?.phone,
    order.shippingAddress?.phone,
  ];
  const names = [
    c?.firstName,
    c?.lastName,
    order.billingAddress?.name,
    order.shippingAddress?.name,
  ];
  const streets = [order.billingAddress?.address1, order.shippingAddress?.address1];
  return [...contact, ...names, ...streets].every((v) => v === null || v === undefined || v === "");
}
