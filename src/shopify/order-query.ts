/**
 * The Admin GraphQL selections the connector reads for an order: everything `SourceOrder` needs
 * and nothing more (each object costs a point). Nested connections are kept small so a page of
 * orders stays under Shopify's 1,000-point single query limit; an order with more lines than
 * LINE_PAGE has the rest read with ORDER_LINES_QUERY.
 */
export const LINE_PAGE = 10;
export const FULFILLMENT_LIMIT = 3;

const MONEY = "shopMoney { amount currencyCode } presentmentMoney { amount currencyCode }";
const SHOP_MONEY = "shopMoney { amount currencyCode }";
const ADDRESS = `firstName lastName name company address1 address2 city province provinceCode
  zip countryCodeV2 phone latitude longitude`;

export const LINE_ITEM_FIELDS = /* GraphQL */ `
  id name title variantTitle sku vendor quantity currentQuantity requiresShipping isGiftCard
  originalUnitPriceSet { ${SHOP_MONEY} }
  discountAllocations { allocatedAmountSet { ${SHOP_MONEY} } }
  taxLines { priceSet { ${SHOP_MONEY} } }
  customAttributes { key value }
  variant { id }
  product { id }
`;

export const ORDER_FIELDS = /* GraphQL */ `
  fragment ConnectorOrder on Order {
    id legacyResourceId name number createdAt updatedAt cancelledAt cancelReason closedAt
    email phone currencyCode presentmentCurrencyCode taxesIncluded test note sourceName totalWeight
    currentSubtotalPriceSet { ${SHOP_MONEY} }
    currentTotalPriceSet { ${MONEY} }
    currentTotalTaxSet { ${SHOP_MONEY} }
    currentTotalDiscountsSet { ${SHOP_MONEY} }
    currentShippingPriceSet { ${SHOP_MONEY} }
    totalTipReceivedSet { ${SHOP_MONEY} }
    currentTotalDutiesSet { ${SHOP_MONEY} }
    customer { id firstName lastName email phone }
    shippingAddress { ${ADDRESS} }
    billingAddress { ${ADDRESS} }
    shippingLine { title }
    shippingLines(first: 3) { nodes { taxLines { priceSet { ${SHOP_MONEY} } } } }
    lineItems(first: ${LINE_PAGE}) {
      nodes { ${LINE_ITEM_FIELDS} }
      pageInfo { hasNextPage endCursor }
    }
    fulfillments(first: ${FULFILLMENT_LIMIT}) {
      id name status displayStatus createdAt updatedAt
      location { id }
      trackingInfo(first: 2) { company number url }
      fulfillmentLineItems(first: ${LINE_PAGE}) { nodes { quantity lineItem { id } } }
    }
  }
`;

/** One page of orders, oldest update first, filtered by a search query. */
export const ORDERS_PAGE_QUERY = /* GraphQL */ `
  query ConnectorOrders($first: Int!, $after: String, $query: String) {
    orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
      nodes { ...ConnectorOrder }
      pageInfo { hasNextPage endCursor }
    }
  }
  ${ORDER_FIELDS}
`;

/** Only IDs and versions: the cheap listing the reconciliation sweep compares with the links. */
export const ORDER_VERSIONS_QUERY = /* GraphQL */ `
  query ConnectorOrderVersions($first: Int!, $after: String, $query: String) {
    orders(first: $first, after: $after, query: $query, sortKey: UPDATED_AT) {
      nodes { id updatedAt }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

export const ORDER_QUERY = /* GraphQL */ `
  query ConnectorOrder($id: ID!) {
    order(id: $id) { ...ConnectorOrder }
  }
  ${ORDER_FIELDS}
`;

export const ORDER_LINES_QUERY = /* GraphQL */ `
  query ConnectorOrderLines($id: ID!, $after: String) {
    order(id: $id) {
      lineItems(first: 50, after: $after) {
        nodes { ${LINE_ITEM_FIELDS} }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;

/** Orders per page: ORDERS_PAGE_QUERY asks for 2 + 4 × 234 = 938 of the 1,000 points allowed. */
export const ORDERS_PAGE_SIZE = 4;
/** The version listing asks for 2 + 250 points. */
export const VERSIONS_PAGE_SIZE = 250;

/** How many orders a search matches (limit null: the exact count). */
export const ORDERS_COUNT_QUERY = /* GraphQL */ `
  query ConnectorOrdersCount($query: String) {
    ordersCount(query: $query, limit: null) { count precision }
  }
`;
