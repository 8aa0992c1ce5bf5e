import type { LineItemWrite } from "../provider/schemas.ts";
import type { SourceLineItem, SourceOrder } from "./source-order.ts";
import { fromCents, nonEmpty } from "./text.ts";

/**
 * One provider line item per Shopify line whose current quantity is above 0 (lines removed by an
 * edit or fully refunded are gone). A canceled order whose lines were all restocked would have
 * none, and the provider needs at least one: it keeps its lines at the quantity ordered, and the
 * cancellation says the rest. Any other order without a line left is refused by the caller.
 */
export function mapLines(order: SourceOrder, warnings: string[]): LineItemWrite[] {
  const live = order.lineItems.filter((l) => l.currentQuantity > 0);
  if (live.length > 0 || order.cancelledAt === null) return live.map((l) => mapLine(l, warnings));
  return order.lineItems
    .filter((l) => l.quantity > 0)
    .map((l) => mapLine({ ...l, currentQuantity: l.quantity }, warnings));
}

/**
 * - quantity: the current quantity.
 * - price: per unit, after this line's discounts (line-level and its share of order-level ones,
 *   which Shopify gives for the quantity ordered): unit price − discounts ÷ quantity ordered,
 *   rounded to the cent, never below 0.
 * - tax: the line's tax lines (for the quantity ordered) scaled to the current quantity, rounded
 *   to the cent.
 * - sku: Shopify's, else `shopify-variant-<variantId>`, else `shopify-line-<id>` (custom items
 *   have none; the provider requires one, and the fallback is stable across syncs).
 * - productId, variantId, vendor and options only when Shopify has them.
 */
export function mapLine(line: SourceLineItem, warnings: string[]): LineItemWrite {
  const ordered = line.quantity > 0 ? line.quantity : line.currentQuantity;
  const unitCents = Math.max(0, Math.round(line.unitPriceCents - line.discountCents / ordered));
  const taxCents = Math.max(0, Math.round((line.taxCents * line.currentQuantity) / ordered));
  const productId = nonEmpty(line.productId);
  const variantId = nonEmpty(line.variantId);
  const vendor = nonEmpty(line.vendor);
  let sku = nonEmpty(line.sku);
  if (sku === null) {
    sku = variantId ? `shopify-variant-${variantId}` : `shopify-line-${line.id}`;
    warnings.push(`line ${line.id} has no SKU; sent as ${sku}`);
  }
  return {
    sourceLineItemId: line.id,
    ...(productId ? { productId } : {}),
    ...(variantId ? { variantId } : {}),
    name: nonEmpty(line.name) ?? nonEmpty(line.title) ?? sku,
    quantity: line.currentQuantity,
    sku,
    tax: fromCents(taxCents),
    price: fromCents(unitCents),
    ...(vendor ? { vendor } : {}),
    ...(line.options.length > 0 ? { options: line.options } : {}),
  };
}
