import { isShopifyId } from "./source-order.ts";

/**
 * An order as an operator or a merchant names it (`resync --order`, `orders show --order`, the
 * admin API's resync `order`, the settings page's resync form): its Shopify ID or its name. The
 * one reading of every such value, so that no entry point takes what another refuses.
 */
export interface OrderRef {
  /** As given (trimmed): how the order is named back to whoever gave it. */
  text: string;
  /** Its Shopify ID in digits, when the text is one (digits, or `gid://shopify/Order/N`). */
  id: string | null;
  /** Its name with the `#` (`#1001`), when the text can be one: digits or any other text. */
  name: string | null;
}

/** What an order's ID or name looks like, for the messages that refuse one. */
export const ORDER_REF_FORMS =
  "an order's Shopify ID (820982911946154508 or gid://shopify/Order/820982911946154508) or its name (#1001)";

/**
 * Reads an order's ID or name, or says why the text can be neither:
 * - `gid://shopify/Order/N` is the ID N; a gid of another kind (`gid://shopify/Product/5`) or not
 *   ending in an ID cannot be an order's;
 * - digits are an ID and, failing that, a name (`1001` is `#1001`); a number that is not an ID
 *   (`0`, `-5`, `1.5`, one past 2^64−1) cannot be either: no order has it;
 * - any other text is a name (`#1001`, `EU-1001`), `#` added when missing.
 * Before, such text was looked for and answered "not found", as if the order could exist.
 */
export function parseOrderRef(
  value: string,
): { ok: true; ref: OrderRef } | { ok: false; message: string } {
  const text = value.trim();
  if (text === "") return { ok: false, message: `must be ${ORDER_REF_FORMS}` };
  if (/^gid:/i.test(text)) {
    const id = /^gid:\/\/shopify\/Order\/(\d+)$/.exec(text)?.[1];
    if (id !== undefined && isShopifyId(id)) return { ok: true, ref: { text, id, name: null } };
    const kind = /^gid:\/\/shopify\/([^/]+)\//.exec(text)?.[1];
    const why =
      kind && kind !== "Order"
        ? `is the ID of a ${kind}, not an order`
        : "is not an order's ID (gid://shopify/Order/ and its digits)";
    return { ok: false, message: `${why}: give ${ORDER_REF_FORMS}` };
  }
  if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(text)) {
    if (isShopifyId(text)) return { ok: true, ref: { text, id: text, name: `#${text}` } };
    return {
      ok: false,
      message: `is not an order's ID (a whole number from 1 to 18446744073709551615): give ${ORDER_REF_FORMS}`,
    };
  }
  return { ok: true, ref: { text, id: null, name: text.startsWith("#") ? text : `#${text}` } };
}
