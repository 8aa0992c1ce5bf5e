import { PRICE_PATTERN } from "../../provider/index.ts";

/**
 * Why a price string breaks the provider's rule (^\d{1,8}(\.\d{1,2})?$), in words an operator
 * can act on, with the value to write instead when one can be derived; null when it is valid.
 */
export function priceProblem(value: string): string | null {
  if (PRICE_PATTERN.test(value)) return null;
  const plain = value.replace(/[^\d.]/g, "");
  const suggestion = PRICE_PATTERN.test(plain) && plain !== "" ? `; write ${plain}` : "";
  if (value.trim().startsWith("-")) return `"${value}" is negative: a price is 0 or more`;
  if (/[^\d.,'\s]/.test(value)) {
    return `"${value}" has a currency symbol or other text: write a plain decimal in the store's currency${suggestion}`;
  }
  if (/[,'\s]/.test(value)) return `"${value}" has a thousands separator${suggestion}`;
  const [whole = "", fraction] = value.split(".");
  if (fraction !== undefined && fraction.length > 2) {
    return `"${value}" has more than 2 decimals`;
  }
  if (whole.length > 8) return `"${value}" is above 99999999.99`;
  return `"${value}" is not a plain decimal such as 19.99`;
}
