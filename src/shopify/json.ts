import { isInteger, isSafeNumber, parse } from "lossless-json";

/** Any integer of 16 or more digits could be beyond 2^53; only then is the slow parser needed. */
const LONG_INTEGER = /[:[,]\s*-?\d{16,}\s*[,}\]]/;

/**
 * Parses a webhook body without losing 64-bit IDs (Shopify's documentation: IDs may exceed
 * Number.MAX_SAFE_INTEGER). Integers that are not safe numbers stay decimal strings; everything
 * else is an ordinary number. The common case (no long integers) takes the fast native parser.
 */
export function parseShopifyJson(raw: string): unknown {
  if (!LONG_INTEGER.test(raw)) return JSON.parse(raw);
  return parse(raw, null, (value: string) =>
    isInteger(value) && !isSafeNumber(value) ? value : Number(value),
  );
}
