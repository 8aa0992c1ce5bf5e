import { isShopifyId } from "../sync/source-order.ts";
/**
 * Reading untrusted Shopify JSON, shared by the webhook (REST) and Admin GraphQL normalizers:
 * small total readers that answer null for anything unusable, and the required-field readers
 * that throw a PayloadError naming the field.
 */
export type Json = Record<string, unknown>;

/** A validly signed body we cannot use; `field` names what is wrong. */
export class PayloadError extends Error {
  override name = "PayloadError";
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/**
 * A signed body that names another shop than the X-Shopify-Shop-Domain header. Shopify's HMAC
 * covers the body only, so this is a captured delivery replayed under another shop's header:
 * refused (400), never stored or dead-lettered under the header's shop.
 */
export class ShopMismatchError extends Error {
  override name = "ShopMismatchError";
  constructor(
    readonly field: string,
    readonly bodyShop: string | null,
  ) {
    super(
      bodyShop === null
        ? `${field}: the body must name the shop of X-Shopify-Shop-Domain`
        : `${field}: names another shop than X-Shopify-Shop-Domain`,
    );
  }
}

export const isObject = (v: unknown): v is Json =>
  v !== null && typeof v === "object" && !Array.isArray(v);
export const str = (v: unknown): string | null =>
  typeof v === "string" && v.trim() !== "" ? v : null;
export const num = (v: unknown): number | null =>
  typeof v === "number" && Number.isFinite(v) ? v : null;

const MAX_SHOPIFY_ID = 2n ** 64n - 1n;

/** A Shopify ID as decimal text, from a number, a bigint, decimal text or a gid. */
export { isShopifyId };

export function idOf(value: unknown): string | null {
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return String(value);
  if (typeof value === "bigint")
    return value > 0n && value <= MAX_SHOPIFY_ID ? value.toString() : null;
  if (typeof value === "string") {
    const digits = /^gid:\/\/shopify\/\w+\/(\d+)/.exec(value)?.[1] ?? value;
    return isShopifyId(digits) ? digits : null;
  }
  return null;
}

export function requireId(value: unknown, field: string): string {
  const id = idOf(value);
  if (!id) {
    throw new PayloadError(
      field,
      "a Shopify ID (a number or a gid, from 1 to 18446744073709551615) is required",
    );
  }
  return id;
}

export function requireDate(value: unknown, field: string): string {
  const text = str(value);
  if (!text || Number.isNaN(Date.parse(text)))
    throw new PayloadError(field, "an ISO 8601 date-time is required");
  return text;
}

export function optionalDate(value: unknown): string | null {
  const text = str(value);
  return text && !Number.isNaN(Date.parse(text)) ? text : null;
}
