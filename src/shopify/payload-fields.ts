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

/** A Shopify ID as decimal text, from a number, a bigint, decimal text or a gid. */
export function idOf(value: unknown): string | null {
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return String(value);
  if (typeof value === "bigint" && value > 0n) return value.toString();
  if (typeof value === "string") {
    const gid = /^gid:\/\/shopify\/\w+\/(\d+)/.exec(value);
    if (gid?.[1]) return gid[1];
    if (/^\d+$/.test(value)) return value;
  }
  return null;
}

export function requireId(value: unknown, field: string): string {
  const id = idOf(value);
  if (!id) throw new PayloadError(field, "a Shopify ID (a number or a gid) is required");
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
