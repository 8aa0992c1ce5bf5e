import { connectionOf } from "./connection.ts";
import type { SchemaModule } from "./module.ts";
import { gid, type Json, list } from "./rest-json.ts";

/** Shipment statuses that Fulfillment.displayStatus reports under the same name. */
const SHIPMENT_STATUSES = [
  "label_printed",
  "label_purchased",
  "attempted_delivery",
  "ready_for_pickup",
  "picked_up",
  "confirmed",
  "in_transit",
  "out_for_delivery",
  "delivered",
  "failure",
];

/** An order's fulfillments, read from its REST record (`{ fulfillment, order }`). */
export const fulfillmentsModule: SchemaModule = {
  typeDefs: /* GraphQL */ `
    enum FulfillmentStatus {
      CANCELLED
      ERROR
      FAILURE
      OPEN
      PENDING
      SUCCESS
    }

    enum FulfillmentDisplayStatus {
      ATTEMPTED_DELIVERY
      CANCELED
      CONFIRMED
      DELIVERED
      FAILURE
      FULFILLED
      IN_TRANSIT
      LABEL_PRINTED
      LABEL_PURCHASED
      MARKED_AS_FULFILLED
      NOT_DELIVERED
      OUT_FOR_DELIVERY
      PICKED_UP
      READY_FOR_PICKUP
      SUBMITTED
    }

    type Location implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
    }

    type FulfillmentTrackingInfo {
      company: String
      number: String
      url: URL
    }

    type FulfillmentLineItem {
      id: ID!
      quantity: Int
      lineItem: LineItem!
    }

    type FulfillmentLineItemConnection {
      nodes: [FulfillmentLineItem!]!
      pageInfo: PageInfo!
    }

    type Fulfillment implements Node {
      id: ID!
      legacyResourceId: UnsignedInt64!
      name: String!
      status: FulfillmentStatus!
      displayStatus: FulfillmentDisplayStatus
      createdAt: DateTime!
      updatedAt: DateTime!
      location: Location
      trackingInfo(first: Int): [FulfillmentTrackingInfo!]!
      fulfillmentLineItems(first: Int, after: String): FulfillmentLineItemConnection!
    }
  `,
  resolvers: {
    Fulfillment: {
      id: (s) => gid("Fulfillment", (s as { fulfillment: Json }).fulfillment.id),
      legacyResourceId: (s) => String((s as { fulfillment: Json }).fulfillment.id),
      name: (s) => (s as { fulfillment: Json }).fulfillment.name ?? "",
      status: (s) =>
        String((s as { fulfillment: Json }).fulfillment.status ?? "success").toUpperCase(),
      displayStatus: (s) => {
        const { fulfillment } = s as { fulfillment: Json };
        const shipment = fulfillment.shipment_status;
        if (typeof shipment === "string" && SHIPMENT_STATUSES.includes(shipment))
          return shipment.toUpperCase();
        if (fulfillment.status === "cancelled") return "CANCELED";
        return "FULFILLED";
      },
      createdAt: (s) => (s as { fulfillment: Json }).fulfillment.created_at,
      updatedAt: (s) => {
        const { fulfillment } = s as { fulfillment: Json };
        return fulfillment.updated_at ?? fulfillment.created_at;
      },
      location: (s) => {
        const id = (s as { fulfillment: Json }).fulfillment.location_id;
        return id ? { id: gid("Location", id), legacyResourceId: String(id) } : null;
      },
      trackingInfo: (s) => {
        const { fulfillment: f } = s as { fulfillment: Json };
        const numbers = Array.isArray(f.tracking_numbers)
          ? (f.tracking_numbers as unknown[])
          : f.tracking_number
            ? [f.tracking_number]
            : [];
        const urls = Array.isArray(f.tracking_urls)
          ? (f.tracking_urls as unknown[])
          : f.tracking_url
            ? [f.tracking_url]
            : [];
        return numbers.map((number, i) => ({
          company: f.tracking_company ?? null,
          number,
          url: urls[i] ?? null,
        }));
      },
      fulfillmentLineItems: (s, args) => {
        const { fulfillment, order } = s as { fulfillment: Json; order: Json };
        const orderLines = list(order.line_items);
        const items = list(fulfillment.line_items).map((l) => ({
          id: gid("FulfillmentLineItem", `${String(fulfillment.id)}${String(l.id)}`),
          quantity: l.quantity ?? 0,
          lineItem: {
            line: orderLines.find((ol) => String(ol.id) === String(l.id)) ?? l,
            order,
          },
          key: Number(l.id),
        }));
        return connectionOf(items, (i) => [i.key, i.key], args);
      },
    },
  },
};
