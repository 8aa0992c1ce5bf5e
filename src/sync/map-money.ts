import type { MapError } from "./map-result.ts";
import type { SourceOrder } from "./source-order.ts";

/** The four amounts of a provider order, in whole cents of the shop's currency. */
export interface OrderMoney {
  shippingCents: number;
  subtotalCents: number;
  taxCents: number;
  totalCents: number;
}

/**
 * The provider refuses an order unless totalMoney = shippingMoney + subtotalMoney + taxMoney, so
 * three amounts are taken from Shopify and the fourth is derived:
 *
 * - totalMoney: Shopify's current total (after edits and refunds; tips and duties included).
 * - taxMoney: Shopify's current total tax (line tax and shipping tax).
 * - shippingMoney: the current shipping price; in a tax-inclusive shop the shipping price holds
 *   its own tax, which taxMoney already counts, so it is sent net of that tax.
 * - subtotalMoney = total − shipping − tax, so the rule holds to the cent by construction. It is
 *   then the product lines after discounts, net of tax, plus tips and duties.
 *
 * A refund of a custom amount (no refund lines, only an order adjustment, `refund_discrepancy`)
 * lowers Shopify's current total while its lines, shipping and tax stay: the subtotal takes the
 * refund. One larger than the goods would leave the total below shipping plus tax; the refund is
 * then taken off the goods (subtotalMoney 0), then the shipping, then the tax, so no amount sent
 * is negative and the rule still holds (with a warning).
 *
 * A negative total or tax, or a tax-inclusive shipping price below its own tax, is absurd data:
 * an error naming the field, never a body the provider would refuse. Shopify's own subtotal is
 * only cross-checked: a difference is a warning.
 */
export function mapMoney(
  order: SourceOrder,
  errors: MapError[],
  warnings: string[],
): OrderMoney | null {
  const { money } = order;
  const totalCents = money.totalCents;
  const taxCents = money.taxCents;
  const shippingCents = order.taxesIncluded
    ? money.shippingCents - money.shippingTaxCents
    : money.shippingCents;
  const subtotalCents = totalCents - shippingCents - taxCents;

  const before = errors.length;
  const negative = (field: string, cents: number, why: string) => {
    if (cents < 0) errors.push({ kind: "order", field, message: `${why} (${cents / 100})` });
  };
  negative("totalMoney", totalCents, "Shopify's current total is negative");
  negative("taxMoney", taxCents, "Shopify's current total tax is negative");
  negative("shippingMoney", shippingCents, "the shipping price is below its own tax");
  if (errors.length > before) return null;

  if (subtotalCents < 0) {
    // Refunded beyond the goods (a custom amount): off the shipping next, then the tax.
    const keptTax = Math.min(taxCents, totalCents);
    const keptShipping = totalCents - keptTax;
    warnings.push(
      `totalMoney ${totalCents / 100} is below Shopify's shipping ${shippingCents / 100} + tax ${taxCents / 100} (a refund of a custom amount): sent as subtotalMoney 0, shippingMoney ${keptShipping / 100}, taxMoney ${keptTax / 100}`,
    );
    return { shippingCents: keptShipping, subtotalCents: 0, taxCents: keptTax, totalCents };
  }

  // Shopify's subtotal is after discounts, before shipping, duties, taxes and tips; in a
  // tax-inclusive shop it holds the line tax (total tax minus the shipping tax).
  const lineTaxInside = order.taxesIncluded ? taxCents - money.shippingTaxCents : 0;
  const expected = money.subtotalCents - lineTaxInside + money.tipCents + money.dutiesCents;
  if (expected !== subtotalCents) {
    warnings.push(
      `subtotalMoney ${subtotalCents / 100} (total − shipping − tax) differs from Shopify's subtotal${order.taxesIncluded ? " net of tax" : ""} + tips + duties (${expected / 100})`,
    );
  }
  return { shippingCents, subtotalCents, taxCents, totalCents };
}

/**
 * Presentment total ÷ shop total, to 6 decimals: only when the customer paid in another currency
 * and both totals are positive (a rate from a zero total means nothing).
 */
export function conversionRate(order: SourceOrder): number | undefined {
  const presentment = order.presentmentTotalCents;
  if (order.presentmentCurrency === order.currency) return undefined;
  if (presentment === null || presentment <= 0 || order.money.totalCents <= 0) return undefined;
  const rate = Math.round((presentment / order.money.totalCents) * 1e6) / 1e6;
  return rate > 0 ? rate : undefined;
}
