/** Bounds of a whole number an operator types: `--limit`, `?offset=`, a provider store ID. */
export interface WholeNumberBounds {
  min: number;
  max?: number;
}

/** What a whole number within `bounds` must be, in the words the CLI and the admin API use. */
export function wholeNumberRule({ min, max }: WholeNumberBounds): string {
  return max === undefined
    ? `must be a whole number, at least ${min}`
    : `must be a whole number from ${min} to ${max}`;
}

/**
 * `text` as a whole number within `bounds`, or null. Digits only: `Number()` alone took `1e2`
 * for 100, `0x10` for 16 and an empty value for 0.
 */
export function parseWholeNumber(text: string, { min, max }: WholeNumberBounds): number | null {
  if (!/^\d+$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= min && n <= (max ?? Number.MAX_SAFE_INTEGER) ? n : null;
}
