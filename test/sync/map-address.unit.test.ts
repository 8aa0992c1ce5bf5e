import { describe, expect, it } from "vitest";
import { mapErrors, mapOk, sourceAddress, sourceOrder } from "./factories.ts";

const shippedTo = (overrides: Parameters<typeof sourceAddress>[0]) =>
  mapOk(sourceOrder({ shippingAddress: sourceAddress(overrides) })).order.shippingAddress;

describe("mapOrder: addresses", () => {
  it("maps street, second line, city, province code, zip, country and coordinates", () => {
    expect(
      shippedTo({ address2: "Apt 4", latitude: 39.78, longitude: -89.65, company: "Acme" }),
    ).toEqual({
      name: "Ada Lovelace",
      firstName: "Ada",
      lastName: "Lovelace",
      line1: "1 Main St",
      line2: "Apt 4",
      city: "Springfield",
      stateOrProvinceCode: "IL",
      postalCode: "62701",
      countryCode: "US",
      latitude: 39.78,
      longitude: -89.65,
    });
  });

  it("uses the second address line as the first when the first is empty", () => {
    expect(shippedTo({ address1: "", address2: "PO Box 12" })).toMatchObject({
      line1: "PO Box 12",
    });
    expect(shippedTo({ address1: "", address2: "PO Box 12" })).not.toHaveProperty("line2");
  });

  it("falls back to the province name, then to the country code, for the province", () => {
    expect(shippedTo({ provinceCode: null, province: "Illinois" }).stateOrProvinceCode).toBe(
      "Illinois",
    );
    expect(
      shippedTo({ provinceCode: "", province: null, countryCode: "DE", city: "Berlin" })
        .stateOrProvinceCode,
    ).toBe("DE");
  });

  it("sends '-' as the postal code of an address without one", () => {
    expect(shippedTo({ zip: null, countryCode: "HK", provinceCode: null }).postalCode).toBe("-");
    expect(shippedTo({ zip: " " }).postalCode).toBe("-");
  });

  it("upper-cases the country code", () => {
    expect(shippedTo({ countryCode: "ca", provinceCode: "ON" }).countryCode).toBe("CA");
  });

  it("leaves out coordinates that are out of range", () => {
    const address = shippedTo({ latitude: 91, longitude: -181 });
    expect(address).not.toHaveProperty("latitude");
    expect(address).not.toHaveProperty("longitude");
  });

  it("ships a local pickup or digital order to its billing address", () => {
    const { order, warnings } = mapOk(
      sourceOrder({ shippingAddress: null, billingAddress: sourceAddress({ city: "Peoria" }) }),
    );
    expect(order.shippingAddress).toEqual(order.billingAddress);
    expect(order.shippingAddress.city).toBe("Peoria");
    expect(warnings).toEqual([]);
  });

  it("bills an order without a billing address to its shipping address", () => {
    const { order } = mapOk(
      sourceOrder({ billingAddress: null, shippingAddress: sourceAddress({ city: "Peoria" }) }),
    );
    expect(order.billingAddress).toEqual(order.shippingAddress);
  });

  it("replaces a shipping address without a city by the billing address, with a warning", () => {
    const { order, warnings } = mapOk(
      sourceOrder({
        shippingAddress: sourceAddress({ city: null }),
        billingAddress: sourceAddress({ city: "Peoria" }),
      }),
    );
    expect(order.shippingAddress.city).toBe("Peoria");
    expect(warnings).toEqual(["shippingAddress lacks a street, city or country; not used"]);
  });

  it("refuses an order with no usable address, naming shippingAddress", () => {
    expect(mapErrors(sourceOrder({ shippingAddress: null, billingAddress: null }))).toEqual([
      "shippingAddress",
    ]);
    const nowhere = sourceAddress({ countryCode: "Narnia" });
    expect(mapErrors(sourceOrder({ shippingAddress: nowhere, billingAddress: nowhere }))).toEqual([
      "shippingAddress",
    ]);
  });
});
