/**
 * Why an order or a webhook went to the dead-letter queue:
 * - `config`: the shop's settings or credentials (paused, no store, a currency or location the
 *   provider store cannot take, refused credentials); an operator fixes them, then retries;
 * - `mapping`: the order's own data cannot make a body the provider accepts;
 * - `protected-data`: Shopify withheld the customer (the app is not approved for it);
 * - `provider-validation`, `provider-not-found`, `provider-conflict`: the provider refused the
 *   request (422, 404, an unresolvable 409);
 * - `link-mismatch`: the linked provider order answered as another Shopify order's;
 * - `exhausted`: a transient failure that outlasted every attempt;
 * - `payload`: a webhook body that could not be used at all.
 */
export const FAILURE_CATEGORIES = [
  "config",
  "mapping",
  "protected-data",
  "provider-validation",
  "provider-not-found",
  "provider-conflict",
  "link-mismatch",
  "exhausted",
  "payload",
] as const;
export type FailureCategory = (typeof FAILURE_CATEGORIES)[number];

/** A field a failure names: its path in the provider body, and the Shopify ID it points at. */
export interface FailureField {
  path: string;
  ref?: string;
}

/** What is kept of an order's last failure: what the merchant is told is built from it. */
export interface FailureRecord {
  message: string;
  category: FailureCategory;
  fields: FailureField[];
}
