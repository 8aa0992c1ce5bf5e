import { baseModule } from "./base.ts";
import { catalogModule } from "./catalog.ts";
import { fulfillmentsModule } from "./fulfillments.ts";
import type { SchemaModule } from "./module.ts";
import { orderLinesModule } from "./order-lines.ts";
import { ordersModule } from "./orders.ts";
import { tagsModule } from "./tags.ts";
import { webhooksModule } from "./webhooks.ts";

export { MAX_PAGE_SIZE, PAGINATION_LIMIT } from "./connection.ts";
export { buildStandInSchema, type SchemaModule, type StandInContext } from "./module.ts";

/**
 * Every module of the stand-in's Admin GraphQL schema. A new Shopify area (shop, products,
 * locations…) is one more file exporting a SchemaModule, added to this list.
 */
export const STAND_IN_MODULES: SchemaModule[] = [
  baseModule,
  ordersModule,
  orderLinesModule,
  fulfillmentsModule,
  webhooksModule,
  catalogModule,
  tagsModule,
];
