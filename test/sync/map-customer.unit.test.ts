import { describe, expect, it } from "vitest";
import { guestId, type ShopifyOrderId } from "../../src/sync/index.ts";
import { mapErrors, mapOk, sourceAddress, sourceOrder } from "./factories.ts";

const noContact = {
  id: "9001",
  firstName: "Ada",
  lastName: "Lovelace",
  email: null,
  phone: null,
};

describe("mapOrder: customer", () => {
  it("uses the Shopify customer id and names", () => {
    expect(mapOk(sourceOrder()).order.customer).toMatchObject({
      sourceCustomerId: "9001",
      firstName: "Ada",
      lastName: "Lovelace",
    });
  });

  it("gives a guest a stable id from the lower-cased email, the same on every order", () => {
    const first = mapOk(sourceOrder({ customer: null, email: "Walk.In@Example.com" }));
    const second = mapOk(
      sourceOrder({ id: "5002" as ShopifyOrderId, customer: null, email: "walk.in@example.com" }),
    );
    expect(first.order.customer.sourceCustomerId).toBe(guestId("walk.in@example.com"));
    expect(first.order.customer.sourceCustomerId).toMatch(/^guest:[0-9a-f]{16}$/);
    expect(second.order.customer.sourceCustomerId).toBe(first.order.customer.sourceCustomerId);
    expect(first.order.customer.email).toBe("Walk.In@Example.com");
  });

  it("gives a guest without an email an id from the phone in E.164", () => {
    const { order } = mapOk(sourceOrder({ customer: null, email: null, phone: "(415) 555-0123" }));
    expect(order.customer).toMatchObject({
      sourceCustomerId: guestId("+14155550123"),
      phone: "+14155550123",
    });
    expect(order.customer).not.toHaveProperty("email");
  });

  it("takes a guest's names from the billing address, else the shipping address", () => {
    const billing = mapOk(sourceOrder({ customer: null })).order.customer;
    expect(billing).toMatchObject({ firstName: "Ada", lastName: "Lovelace" });
    const shipping = mapOk(
      sourceOrder({
        customer: null,
        billingAddress: sourceAddress({ firstName: null, lastName: null }),
        shippingAddress: sourceAddress({ firstName: "Grace", lastName: "Hopper" }),
      }),
    ).order.customer;
    expect(shipping).toMatchObject({ firstName: "Grace", lastName: "Hopper" });
  });

  it("never mixes two people's names: a customer with only a first name keeps an empty last name", () => {
    const { order } = mapOk(
      sourceOrder({ customer: { ...noContact, lastName: null, email: "ada@example.com" } }),
    );
    expect(order.customer).toMatchObject({ firstName: "Ada", lastName: "" });
  });

  it("sends empty names when nobody on the order has one", () => {
    const nameless = sourceAddress({ firstName: null, lastName: null });
    const { order } = mapOk(
      sourceOrder({ customer: null, billingAddress: nameless, shippingAddress: nameless }),
    );
    expect(order.customer).toMatchObject({ firstName: "", lastName: "" });
  });

  it("takes the order's email when the customer has none or an invalid one, and drops invalid ones", () => {
    const fromOrder = (customerEmail: string | null, orderEmail: string | null) =>
      mapOk(
        sourceOrder({
          customer: { ...noContact, email: customerEmail, phone: "+14155550123" },
          email: orderEmail,
        }),
      ).order.customer.email;
    expect(fromOrder(null, "order@example.com")).toBe("order@example.com");
    expect(fromOrder("not an email", "order@example.com")).toBe("order@example.com");
    expect(fromOrder("", "order@example.com")).toBe("order@example.com");
    expect(fromOrder("a@b", "also..bad@example")).toBeUndefined();
  });

  it("sends the customer's phone in E.164 first", () => {
    const { order } = mapOk(
      sourceOrder({
        customer: { ...noContact, phone: "+442079460018" },
        phone: "+14155550123",
      }),
    );
    expect(order.customer.phone).toBe("+442079460018");
  });

  it("reads a local address phone in that address's country", () => {
    const fr = sourceAddress({
      countryCode: "FR",
      provinceCode: null,
      province: null,
      zip: "75001",
      city: "Paris",
      phone: "06 12 34 56 78",
    });
    const us = mapOk(sourceOrder({ billingAddress: sourceAddress({ phone: "(415) 555-0123" }) }));
    const france = mapOk(sourceOrder({ billingAddress: fr, shippingAddress: fr }));
    const billedInFranceShippedToUs = mapOk(sourceOrder({ billingAddress: fr }));
    expect(us.order.customer.phone).toBe("+14155550123");
    expect(france.order.customer.phone).toBe("+33612345678");
    expect(billedInFranceShippedToUs.order.customer.phone).toBe("+33612345678");
  });

  it("leaves out a phone that is not a number, with a warning that does not repeat it", () => {
    const { order, warnings } = mapOk(
      sourceOrder({ billingAddress: sourceAddress({ phone: "555-555-SHIP" }) }),
    );
    expect(order.customer).not.toHaveProperty("phone");
    expect(order.customer.email).toBe("ada@example.com");
    expect(warnings).toEqual(["billing address phone is not a valid phone number; left out"]);
  });

  it("skips an unusable phone for the next valid one", () => {
    const { order } = mapOk(
      sourceOrder({
        customer: { ...noContact, phone: "12" },
        shippingAddress: sourceAddress({ phone: "415-555-0123" }),
      }),
    );
    expect(order.customer.phone).toBe("+14155550123");
  });

  it("refuses an order with neither a valid email nor a valid phone, naming customer.email", () => {
    const order = sourceOrder({
      customer: { ...noContact, email: "nobody", phone: "555-555-SHIP" },
      email: null,
    });
    expect(mapErrors(order)).toEqual(["customer.email"]);
  });
});
