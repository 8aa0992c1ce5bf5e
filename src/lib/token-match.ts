import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Compares a presented token with the configured one in constant time. Both sides are hashed
 * first, so neither their content nor their length leaks through timing.
 */
export function tokenMatches(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
