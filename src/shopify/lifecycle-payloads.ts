import { z } from "zod";
import type { Topic } from "./topics.ts";

/**
 * The shapes of the lifecycle and compliance bodies, per topic. Shopify's HMAC covers the body
 * only, so the topic header can be changed: a captured `customers/data_request` re-sent as
 * `customers/redact`, or a privacy body re-sent as `app/uninstalled`. Each topic's body must
 * have its own distinguishing fields and none of the others':
 *
 * - `app/uninstalled`, `shop/update`: the Shop resource (`id`, `myshopify_domain`, `domain`…).
 *   These two share one shape; `app/uninstalled` is confirmed with Shopify before it acts.
 * - `customers/data_request`: `shop_domain`, `customer`, `orders_requested`, `data_request`.
 * - `customers/redact`: `shop_domain`, `customer`, `orders_to_redact`.
 * - `shop/redact`: `shop_id`, `shop_domain` only.
 *
 * Unknown fields are allowed (Shopify adds fields); only the other topics' markers are refused.
 */
const ID = z.union([z.number(), z.bigint(), z.string().min(1)]);
const absent = z.never({ error: "belongs to another topic's body" }).optional();
const idList = z.array(z.unknown(), { error: "an array of order IDs is required" });

/** The fields that mark a body as one topic's and no other's. */
const MARKERS = [
  "shop_domain",
  "shop_id",
  "customer",
  "orders_requested",
  "orders_to_redact",
  "data_request",
] as const;

/**
 * A topic's shape: every other topic's marker absent (checked first, so an answer names the
 * foreign field), then its own fields.
 */
function shape(own: Record<string, z.ZodType>) {
  const foreign = MARKERS.filter((m) => !Object.hasOwn(own, m)).map((m) => [m, absent] as const);
  return z.looseObject({ ...Object.fromEntries(foreign), ...own });
}

const shopDomain = z.string({ error: "the shop's myshopify.com domain is required" }).min(1);
const customer = z.looseObject({ id: ID.optional() }, { error: "a customer object is required" });
const shopResource = shape({ id: ID });

const SHAPES = {
  "app/uninstalled": shopResource,
  "shop/update": shopResource,
  "customers/data_request": shape({
    shop_domain: shopDomain,
    shop_id: ID.optional(),
    customer,
    orders_requested: idList,
    data_request: z.looseObject({ id: ID }).optional(),
  }),
  "customers/redact": shape({
    shop_domain: shopDomain,
    shop_id: ID.optional(),
    customer,
    orders_to_redact: idList,
  }),
  "shop/redact": shape({ shop_domain: shopDomain, shop_id: ID.optional() }),
} as const;

type LifecycleTopic = keyof typeof SHAPES;

/**
 * A validly signed body whose shape is not its topic's: a delivery replayed under another
 * topic header. Refused (400), never stored or dead-lettered.
 */
export class TopicMismatchError extends Error {
  override name = "TopicMismatchError";
  constructor(
    readonly topic: string,
    /** The first field that does not fit, e.g. `orders_to_redact`. */
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem} (the body does not fit ${topic})`);
  }
}

export function isLifecycleTopic(topic: string): topic is LifecycleTopic & Topic {
  return Object.hasOwn(SHAPES, topic);
}

/** Throws a TopicMismatchError naming the first field that does not fit the topic's shape. */
export function checkLifecycleShape(topic: LifecycleTopic, body: unknown): void {
  const result = SHAPES[topic].safeParse(body);
  if (result.success) return;
  const issue = result.error.issues[0];
  const field = issue?.path.map(String).join(".") || "body";
  throw new TopicMismatchError(topic, field, issue?.message ?? "does not fit");
}
