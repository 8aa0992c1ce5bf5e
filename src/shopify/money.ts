/**
 * Exact decimal → cents. Shopify sends money as decimal strings ("19.99"); some refund amounts
 * are JSON numbers. Conversion is done on the digits, never through float multiplication, and
 * a third decimal (KWD, BHD…) rounds half away from zero to the cent the provider stores.
 */
export function toCents(value: unknown): number | null {
  if (value === null || value === undefined || value === "") return null;
  const text = typeof value === "number" ? numberToPlain(value) : String(value).trim();
  const match = /^([+-])?(\d*)(?:\.(\d*))?$/.exec(text);
  if (!match || (match[2] === "" && (match[3] ?? "") === "")) return null;
  const sign = match[1] === "-" ? -1 : 1;
  const whole = match[2] === "" ? 0 : Number(match[2]);
  const fraction = (match[3] ?? "").padEnd(3, "0");
  let cents = whole * 100 + Number(fraction.slice(0, 2));
  if (Number(fraction[2]) >= 5) cents += 1;
  if (!Number.isSafeInteger(cents)) return null;
  return sign * cents;
}

function numberToPlain(value: number): string {
  if (!Number.isFinite(value)) return "NaN";
  // toFixed(3) keeps enough digits for half-up rounding to cents without exponent notation.
  return value.toFixed(3);
}
