/** A trimmed string, or null when there is nothing in it: Shopify sends "" and null alike. */
export function nonEmpty(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

/** Cents to the provider's money number: at most 2 decimals, exact for every integer of cents. */
export const fromCents = (cents: number): number => Math.round(cents) / 100;
