import { InvalidArgumentError } from "commander";
import { ConfigError } from "../config/env.ts";
import { REASON_TEXT_MAX } from "../engine/dead-letters.ts";
import { parseWholeNumber, type WholeNumberBounds, wholeNumberRule } from "../lib/whole-number.ts";
import { isTopic, normalizeTopic, TOPICS } from "../shopify/topics.ts";
import { FAILURE_CATEGORIES, type FailureCategory } from "../sync/failure.ts";
import { type OrderRef, parseOrderRef } from "../sync/order-ref.ts";
import { isShopifyId, ShopDomain } from "../sync/source-order.ts";

/**
 * The parsers of the CLI's option values, one per kind, so every command refuses a bad value
 * with the same words: commander prints `error: option '--limit <n>' argument 'abc' is invalid.`
 * and the message given here.
 */

/**
 * A shop's *.myshopify.com domain, lower-cased. What operators give instead is named with the
 * domain they meant: the shop's handle alone (`demo-shop`), its admin URL
 * (`https://admin.shopify.com/store/demo-shop/orders`) or its URL (`https://demo-shop.myshopify.com/`).
 */
export function shopDomain(value: string): string {
  const text = value.trim().toLowerCase();
  const parsed = ShopDomain.safeParse(text);
  if (parsed.success) return parsed.data as string;
  const meant = meantShop(text);
  throw new InvalidArgumentError(
    `must be a *.myshopify.com domain${meant ? ` (did you mean ${meant}?)` : ", such as demo-shop.myshopify.com"}`,
  );
}

function meantShop(text: string): string | null {
  const handle =
    /^(?:https?:\/\/)?admin\.shopify\.com\/store\/([^/?#]+)/.exec(text)?.[1] ??
    /^(?:https?:\/\/)?([^/?#:]+?)(?:\.myshopify\.com)?(?::\d+)?(?:[/?#].*)?$/.exec(text)?.[1];
  if (!handle) return null;
  const domain = `${handle}.myshopify.com`;
  return ShopDomain.safeParse(domain).success ? domain : null;
}

/** A whole number within bounds: `--limit`, `--offset`, `--port`, a provider store ID. */
export function wholeNumber(bounds: WholeNumberBounds): (value: string) => number {
  const message = wholeNumberRule(bounds);
  return (value) => {
    const n = parseWholeNumber(value.trim(), bounds);
    if (n === null) throw new InvalidArgumentError(message);
    return n;
  };
}

/**
 * A currency code (`--currency`): three letters (ISO 4217), upper-cased. Anything else would be
 * saved as the provider store's currency, and every order then dead-lettered as a shop selling
 * in another currency.
 */
export function currencyCode(value: string): string {
  const code = value.trim().toUpperCase();
  if (!/^[A-Z]{3}$/.test(code)) {
    throw new InvalidArgumentError("must be a three-letter currency code, such as USD or EUR");
  }
  return code;
}

/**
 * A Shopify ID of one kind (`--protection-variant-id`, `--remove-location`): its digits, or the
 * Admin GraphQL API's `gid://shopify/<Kind>/N`, read as its digits, which is how the connector
 * compares it with the orders' IDs. A variant's title, its SKU or another kind's gid would be
 * saved and never match.
 */
export function shopifyId(kind: "ProductVariant" | "Location", noun: string) {
  return (value: string): string => {
    const text = value.trim();
    const digits = text.startsWith("gid://")
      ? new RegExp(`^gid://shopify/${kind}/(\\d+)$`).exec(text)?.[1]
      : text;
    if (digits === undefined || !isShopifyId(digits)) {
      throw new InvalidArgumentError(
        `must be a Shopify ${noun} ID, such as 40123456789 or gid://shopify/${kind}/40123456789`,
      );
    }
    return digits;
  };
}

/**
 * An http(s) URL (`webhook send --url`, `sandbox --webhook-url`, `shopify-standin --app-url`),
 * kept as typed. Anything else ended the command with fetch's "Failed to parse URL from …" or
 * "Invalid URL", naming no option, or (`--webhook-url`) started a sandbox whose events went
 * nowhere.
 */
export function httpUrl(example: string): (value: string) => string {
  return (value) => {
    const text = value.trim();
    let protocol = "";
    try {
      protocol = new URL(text).protocol;
    } catch {
      // Not a URL: refused below.
    }
    if (protocol !== "http:" && protocol !== "https:") {
      throw new InvalidArgumentError(`must be an http:// or https:// URL, such as ${example}`);
    }
    return text;
  };
}

/**
 * An order's ID or name (`resync --order`, `orders show --order`), read as the admin API and the
 * settings page read it: text that can be no order's (a product's gid, `-5`) is refused here
 * rather than looked for and answered "not found" or "not synced yet".
 */
export function orderRef(value: string): OrderRef {
  const parsed = parseOrderRef(value);
  if (!parsed.ok) throw new InvalidArgumentError(parsed.message);
  return parsed.ref;
}

/**
 * A webhook topic the receiver handles (`webhook send --topic`), in Shopify's form
 * (`orders/create`) or the GraphQL enum's (`ORDERS_CREATE`), kept as typed. Any other was signed
 * and sent, answered 200 `ignored`, and only then said to be one the connector does not handle.
 */
export function webhookTopic(value: string): string {
  const text = value.trim();
  if (!isTopic(normalizeTopic(text))) {
    throw new InvalidArgumentError(
      `must be a topic the connector handles: ${Object.keys(TOPICS).join(", ")}`,
    );
  }
  return text;
}

/** A dead-letter category (`--reason`): one of those the connector files entries under. */
export function failureCategory(value: string): FailureCategory {
  const category = FAILURE_CATEGORIES.find((known) => known === value.trim());
  if (!category) throw new InvalidArgumentError(`must be one of ${FAILURE_CATEGORIES.join(", ")}`);
  return category;
}

/** Text a dead letter's reason must contain (`--reason-includes`): not empty, one line. */
export function reasonText(value: string): string {
  const text = value.trim();
  if (text === "" || text.length > REASON_TEXT_MAX || /[\r\n]/.test(text)) {
    throw new InvalidArgumentError(`must be one line of 1 to ${REASON_TEXT_MAX} characters`);
  }
  return text;
}

/**
 * A `--shop` the connector has no record of: every command says it in the same words, with the
 * two ways to add one, and exits 2 (a setting to fix, as for every ConfigError).
 */
export class UnknownShopError extends ConfigError {
  override name = "UnknownShopError";
  constructor(readonly shop: string) {
    super(
      `no shop ${shop} here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop ${shop} …\``,
    );
  }
}

/** The shop's record, or UnknownShopError: what every command given a `--shop` reads first. */
export async function requireShop<T>(
  ctx: { shops: { getShop(shop: string): Promise<T | null> } },
  shop: string,
): Promise<T> {
  const record = await ctx.shops.getShop(shop);
  if (!record) throw new UnknownShopError(shop);
  return record;
}
