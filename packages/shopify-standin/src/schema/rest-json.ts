/** Reading the stand-in's REST-shaped order records for the GraphQL resolvers. */
export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json =>
  v !== null && typeof v === "object" && !Array.isArray(v);
export const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);
export const gid = (type: string, id: unknown) => `gid://shopify/${type}/${String(id)}`;

export function moneyV2(raw: unknown, fallbackCurrency: string) {
  const m = isObject(raw) ? raw : {};
  return {
    amount: String(m.amount ?? "0.00"),
    currencyCode: String(m.currency_code ?? fallbackCurrency),
  };
}

/** A REST `*_set` (or a plain decimal) as a GraphQL MoneyBag. */
export function moneyBag(set: unknown, plain: unknown, order: Json) {
  const currency = String(order.currency ?? "USD");
  if (isObject(set)) {
    return {
      shopMoney: moneyV2(set.shop_money, currency),
      presentmentMoney: moneyV2(set.presentment_money ?? set.shop_money, currency),
    };
  }
  if (plain === undefined || plain === null) return null;
  const m = { amount: String(plain), currency_code: currency };
  return { shopMoney: moneyV2(m, currency), presentmentMoney: moneyV2(m, currency) };
}

/** A REST line's (or shipping line's) tax lines as GraphQL TaxLines. */
export function taxLines({ line, order }: { line: Json; order: Json }) {
  return list(line.tax_lines).map((t) => ({
    title: t.title ?? null,
    rate: typeof t.rate === "number" ? t.rate : null,
    priceSet: moneyBag(t.price_set, t.price ?? "0.00", order),
  }));
}
