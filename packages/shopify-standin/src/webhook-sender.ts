import { createHmac, randomUUID } from "node:crypto";
import type { Delivery, StandInShop } from "./state.ts";

/** An app-specific subscription, as shopify.app.toml declares them: topics to one URI. */
export interface AppSubscription {
  topics: string[];
  uri: string;
}

/** `orders/create` ⇄ `ORDERS_CREATE`. */
export const topicToEnum = (topic: string) => topic.replace("/", "_").toUpperCase();
export const enumToTopic = (value: string) => value.toLowerCase().replace("_", "/");

/**
 * Sends one event to every subscription of its topic, as Shopify does: the REST-shaped JSON
 * signed with the app's client secret, one webhook id per delivery and one event id shared by
 * all deliveries of the event. Returns what each endpoint answered.
 */
export async function deliverWebhook(options: {
  shop: StandInShop;
  topic: string;
  payload: Record<string, unknown>;
  secret: string;
  apiVersion: string;
  fetch?: typeof fetch;
  /** The app's own subscriptions (shopify.app.toml): every shop's events go there too. */
  appSubscriptions?: readonly AppSubscription[];
}): Promise<Delivery[]> {
  const { shop, topic } = options;
  const targets = [
    ...shop.subscriptions.filter((s) => s.topic === topicToEnum(topic)),
    ...(options.appSubscriptions ?? []).filter((s) => s.topics.includes(topic)),
  ];
  const body = JSON.stringify(options.payload);
  const eventId = randomUUID();
  const triggeredAt = new Date().toISOString();
  const send = options.fetch ?? fetch;
  const out: Delivery[] = [];
  for (const target of targets) {
    const webhookId = randomUUID();
    // Shopify's delivery headers; the signature is the base64 HMAC-SHA256 of the raw body.
    const headers = {
      "content-type": "application/json",
      "x-shopify-topic": topic,
      "x-shopify-hmac-sha256": createHmac("sha256", options.secret).update(body).digest("base64"),
      "x-shopify-shop-domain": shop.domain,
      "x-shopify-api-version": options.apiVersion,
      "x-shopify-webhook-id": webhookId,
      "x-shopify-event-id": eventId,
      "x-shopify-triggered-at": triggeredAt,
    };
    let status: number | "error";
    try {
      const response = await send(target.uri, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(5_000),
      });
      await response.arrayBuffer();
      status = response.status;
    } catch {
      status = "error";
    }
    const aboutOrder = /^(orders|fulfillments|refunds)\//.test(topic);
    const payloadId = aboutOrder ? (options.payload.id ?? options.payload.order_id) : undefined;
    const delivery: Delivery = {
      topic,
      uri: target.uri,
      webhookId,
      orderId: payloadId === undefined ? null : String(payloadId),
      status,
      at: triggeredAt,
    };
    shop.deliveries.push(delivery);
    out.push(delivery);
  }
  return out;
}
