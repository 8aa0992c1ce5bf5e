import type { SchemaModule } from "./module.ts";

/**
 * The roots and the shared types of Shopify's Admin GraphQL API that several modules use.
 * Names and nullability follow Shopify's schema; CurrencyCode is a scalar here (Shopify's enum
 * lists every ISO 4217 code).
 */
export const baseModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
    scalar DateTime
    scalar Decimal
    scalar URL
    scalar UnsignedInt64
    scalar CurrencyCode

    type Query
    type Mutation

    interface Node {
      id: ID!
    }

    type PageInfo {
      hasNextPage: Boolean!
      hasPreviousPage: Boolean!
      startCursor: String
      endCursor: String
    }

    type UserError {
      field: [String!]
      message: String!
    }

    type MoneyV2 {
      amount: Decimal!
      currencyCode: CurrencyCode!
    }

    type MoneyBag {
      shopMoney: MoneyV2!
      presentmentMoney: MoneyV2!
    }

    type MailingAddress {
      id: ID!
      firstName: String
      lastName: String
      name: String
      company: String
      address1: String
      address2: String
      city: String
      province: String
      provinceCode: String
      zip: String
      country: String
      countryCodeV2: String
      phone: String
      latitude: Float
      longitude: Float
    }
  `,
  resolvers: {},
};
