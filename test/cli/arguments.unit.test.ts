import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import {
  currencyCode,
  failureCategory,
  shopDomain,
  shopifyId,
  webhookTopic,
  wholeNumber,
} from "../../src/cli/arguments.ts";

/** The CLI's option parsers: what each takes, and the one message each refuses with. */
const refusal = (parse: (value: string) => unknown, value: string): string => {
  try {
    parse(value);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return (error as Error).message;
  }
  throw new Error(`${value} was accepted`);
};

describe("the CLI's option values", () => {
  it("wholeNumber takes whole numbers within its bounds and names them", () => {
    const limit = wholeNumber({ min: 1, max: 500 });
    expect([limit("1"), limit(" 500 "), limit("50")]).toEqual([1, 500, 50]);
    for (const bad of ["0", "501", "-5", "1.5", "ten", "", " ", "1e400", "1e2", "0x10", "+5"]) {
      expect(refusal(limit, bad), bad).toBe("must be a whole number from 1 to 500");
    }
    const offset = wholeNumber({ min: 0 });
    expect(offset("0")).toBe(0);
    expect(refusal(offset, "-1")).toBe("must be a whole number, at least 0");
    expect(refusal(offset, "9007199254740993")).toBe("must be a whole number, at least 0");
  });

  it("webhookTopic takes the topics the receiver handles, in either form, and lists them", () => {
    expect([webhookTopic("orders/create"), webhookTopic(" ORDERS_CREATE ")]).toEqual([
      "orders/create",
      "ORDERS_CREATE",
    ]);
    for (const bad of ["orders/bogus", "products/update", "orders", "ORDERS_BOGUS"]) {
      expect(refusal(webhookTopic, bad), bad).toMatch(
        /^must be a topic the connector handles: orders\/create, orders\/updated, .*, shop\/redact$/,
      );
    }
  });

  it("failureCategory takes the dead-letter categories only, and lists them", () => {
    expect(failureCategory("provider-validation")).toBe("provider-validation");
    expect(refusal(failureCategory, "provider-valdation")).toBe(
      "must be one of config, mapping, protected-data, provider-validation, provider-not-found, provider-conflict, link-mismatch, exhausted, payload",
    );
  });

  it("shopDomain takes a *.myshopify.com domain in any case", () => {
    expect(shopDomain(" Demo-Shop.MyShopify.com ")).toBe("demo-shop.myshopify.com");
    expect(refusal(shopDomain, "demo-shop.example.com")).toBe(
      "must be a *.myshopify.com domain, such as demo-shop.myshopify.com",
    );
  });

  it("currencyCode takes three letters in any case, and nothing a store could not keep", () => {
    expect([currencyCode("usd"), currencyCode(" Eur ")]).toEqual(["USD", "EUR"]);
    for (const bad of ["dollars", "US$", "US", "USDD", "€", "840"]) {
      expect(refusal(currencyCode, bad), bad).toBe(
        "must be a three-letter currency code, such as USD or EUR",
      );
    }
  });

  it("shopifyId takes an ID's digits or its gid of that kind, as digits", () => {
    const variant = shopifyId("ProductVariant", "variant");
    expect([variant("501"), variant(" gid://shopify/ProductVariant/501 ")]).toEqual(["501", "501"]);
    for (const bad of [
      "Shipping protection",
      "SKU-1",
      "gid://shopify/Product/501",
      "gid://shopify/ProductVariant/",
      "0",
      "-501",
      "18446744073709551616",
    ]) {
      expect(refusal(variant, bad), bad).toBe(
        "must be a Shopify variant ID, such as 40123456789 or gid://shopify/ProductVariant/40123456789",
      );
    }
  });

  it("shopDomain names the domain meant by a shop's handle, its URL or its admin URL", () => {
    for (const typed of [
      "demo-shop",
      "DEMO-SHOP",
      "https://demo-shop.myshopify.com/",
      "demo-shop.myshopify.com/admin/orders",
      "https://admin.shopify.com/store/demo-shop/orders/1",
    ]) {
      expect(refusal(shopDomain, typed), typed).toBe(
        "must be a *.myshopify.com domain (did you mean demo-shop.myshopify.com?)",
      );
    }
  });
});
