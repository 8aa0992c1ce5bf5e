import type { Context, Hono } from "hono";
import type { SandboxOptions, SandboxState } from "./app.ts";
import { check, notFound, SandboxHttpError } from "./http-error.ts";
import {
  FulfillmentWrite,
  LineItemCancel,
  LineItemWrite,
  OrderCancel,
  OrderCreate,
  OrderUpdate,
  PageQuery,
  ProductCreate,
  ProductReplace,
  RegistrationQuery,
  type Scope,
} from "./interface.ts";
import { orderView } from "./orders.ts";
import { paginate } from "./paginate.ts";
import { productView } from "./products.ts";
import { type Env, pageParams, pick, readJson } from "./request.ts";

/** What the route groups share with the app: state, admission and the answer of a write. */
export interface RouteKit {
  state: SandboxState;
  /** Scope, store coverage, rate limit (at arrival) and faults, in that order. */
  admit(c: Context<Env>, scope: Scope, storeId: number | undefined): Promise<number>;
  /** Answers a committed write, or drops the answer after the commit (fault injection). */
  committed(c: Context<Env>, kind: string, body: unknown, status?: 200 | 201 | 204): Response;
  options: SandboxOptions;
}

/** Orders, their line items and fulfillments, and stores (sections 4 and 2.8). */
export function orderRoutes(v1: Hono<Env>, { state, admit, committed, options }: RouteKit) {
  const orderFor = (c: Context<Env>) => {
    const id = Number(c.req.param("orderId"));
    if (!Number.isInteger(id)) throw notFound("order");
    return state.orders.get(id, c.get("claims").storeIds);
  };

  v1.post("/orders", async (c) => {
    const raw = await readJson(c);
    const storeId =
      typeof (raw as { storeId?: unknown })?.storeId === "number"
        ? (raw as { storeId: number }).storeId
        : undefined;
    await admit(c, "write:orders", storeId);
    const order = state.orders.create(check(OrderCreate, raw));
    return committed(c, "createOrder", orderView(order), 201);
  });

  v1.get("/orders", async (c) => {
    const query = c.req.query();
    const storeId = query.storeId ? Number(query.storeId) : undefined;
    const store = await admit(c, "read:orders", storeId);
    const page = check(PageQuery, pageParams(query));
    let orders = state.orders.all.filter((o) => o.storeId === store);
    if (query.sourceOrderId) orders = orders.filter((o) => o.sourceOrderId === query.sourceOrderId);
    if (query.customerEmail)
      orders = orders.filter((o) => o.customer.email === query.customerEmail);
    if (query.orderNameOrNumber) {
      const wanted = query.orderNameOrNumber;
      orders = orders.filter(
        (o) =>
          o.orderName === wanted ||
          o.orderNumber === wanted ||
          o.orderNumber === wanted.replace(/^#/, ""),
      );
    }
    const result = paginate(orders, (o) => o.orderId, page);
    return c.json({ orders: result.items.map(orderView), pageInfo: result.pageInfo });
  });

  v1.get("/orders/:orderId", async (c) => {
    const order = orderFor(c);
    await admit(c, "read:orders", order.storeId);
    return c.json(orderView(order));
  });

  v1.post("/orders/:orderId", async (c) => {
    const order = orderFor(c);
    await admit(c, "write:orders", order.storeId);
    return committed(
      c,
      "updateOrder",
      orderView(state.orders.update(order, check(OrderUpdate, await readJson(c)))),
    );
  });

  v1.delete("/orders/:orderId", async (c) => {
    const order = orderFor(c);
    await admit(c, "write:orders", order.storeId);
    const body = check(OrderCancel, (await readJson(c, true)) ?? {});
    return committed(c, "cancelOrder", orderView(state.orders.cancel(order, body)));
  });

  v1.post("/orders/:orderId/line-items", async (c) => {
    const order = orderFor(c);
    await admit(c, "write:orders", order.storeId);
    return committed(
      c,
      "addLineItem",
      state.orders.addLineItem(order, check(LineItemWrite, await readJson(c))),
      201,
    );
  });

  v1.delete("/orders/:orderId/line-items/:lineItemId", async (c) => {
    const order = orderFor(c);
    await admit(c, "write:orders", order.storeId);
    const body = check(LineItemCancel, (await readJson(c, true)) ?? {});
    return committed(
      c,
      "cancelLineItem",
      state.orders.cancelLineItem(order, Number(c.req.param("lineItemId")), body.sourceCanceledOn),
    );
  });

  v1.post("/orders/:orderId/fulfillments", async (c) => {
    const order = orderFor(c);
    await admit(c, "write:orders", order.storeId);
    const body = check(FulfillmentWrite, await readJson(c));
    const known = options.fulfillmentLocations?.[order.storeId];
    if (known && !known.includes(body.fulfillmentLocationId)) {
      throw new SandboxHttpError(
        400,
        "validation_error",
        `fulfillmentLocationId ${body.fulfillmentLocationId} is not a fulfillment location of store ${order.storeId}`,
        [{ path: "fulfillmentLocationId", message: "unknown fulfillment location" }],
      );
    }
    const result = state.orders.upsertFulfillment(order, body);
    return committed(c, "upsertFulfillment", result.fulfillment, result.created ? 201 : 200);
  });

  v1.get("/orders/:orderId/fulfillments", async (c) => {
    const order = orderFor(c);
    await admit(c, "read:orders", order.storeId);
    return c.json({ fulfillments: order.fulfillments });
  });

  v1.get("/stores/:storeId", async (c) => {
    const storeId = Number(c.req.param("storeId"));
    await admit(c, "read:stores", storeId);
    return c.json({
      storeId,
      currencyCode: options.storeCurrency?.[storeId] ?? "USD",
      ianaTimezone: options.storeTimezone?.[storeId] ?? "America/New_York",
    });
  });
}

/** Legacy products (4.1) and registrations (4.2). */
export function catalogRoutes(v1: Hono<Env>, { state, admit, committed, options }: RouteKit) {
  // -- products ----------------------------------------------------------------------------
  v1.post("/products", async (c) => {
    const body = check(ProductCreate, await readJson(c));
    const store = await admit(c, "write:products", body.storeId);
    if (body.storeId === undefined && c.get("claims").storeIds.length > 1) {
      throw new SandboxHttpError(
        400,
        "validation_error",
        "storeId is required when the token covers more than one store",
        [{ path: "storeId", message: "required for a multi-store token" }],
      );
    }
    const result = state.products.upsert(store, body);
    return committed(c, "upsertProduct", productView(result.product), result.created ? 201 : 200);
  });

  const productId = (c: Context<Env>) => Number(c.req.param("productId"));

  v1.get("/products/:productId", async (c) => {
    await admit(c, "read:products", undefined);
    return c.json(productView(state.products.get(productId(c), c.get("claims").storeIds)));
  });

  v1.put("/products/:productId", async (c) => {
    const body = check(ProductReplace, await readJson(c));
    const product = state.products.get(productId(c), c.get("claims").storeIds);
    await admit(c, "write:products", product.storeId);
    return committed(
      c,
      "replaceProduct",
      productView(state.products.replace(product.productId, c.get("claims").storeIds, body)),
    );
  });

  v1.delete("/products/:productId", async (c) => {
    const product = state.products.get(productId(c), c.get("claims").storeIds);
    await admit(c, "write:products", product.storeId);
    state.products.delete(product.productId, c.get("claims").storeIds);
    return committed(c, "deleteProduct", null, 204);
  });

  // -- registrations -------------------------------------------------------------------------
  v1.get("/registrations", async (c) => {
    const query = c.req.query();
    const store = await admit(
      c,
      "read:registrations",
      query.storeId ? Number(query.storeId) : undefined,
    );
    const q = check(RegistrationQuery, {
      ...pageParams(query),
      ...pick(query, ["customerEmail", "channelName", "externalId"]),
    });
    const listing = options.registrationListing ?? {};
    const filter = !listing.ignoreFilters;
    const list = state.registrations.filter(
      (r) =>
        r.storeId === store &&
        (!filter || !q.customerEmail || r.customerEmail === q.customerEmail) &&
        (!filter || !q.channelName || r.channelName === q.channelName) &&
        (!filter || !q.externalId || r.externalId === q.externalId),
    );
    const { after, before, ...rest } = q;
    const result = paginate(list, (r) => r.registrationId, {
      ...(listing.stuckCursor ? rest : q),
      ...(listing.order ? { orderBy: listing.order } : {}),
      ...(listing.maxPageSize ? { maxPageSize: listing.maxPageSize } : {}),
    });
    const pageInfo = { ...result.pageInfo };
    if (listing.pageInfo === "relay") {
      const backwards = q.last !== undefined || (q.before !== undefined && q.first === undefined);
      if (backwards) pageInfo.hasNextPage = false;
      else pageInfo.hasPreviousPage = false;
    }
    if (listing.pageInfo === "missing") return c.json({ registrations: result.items });
    if (listing.pageInfo === "bare") return c.json(result.items);
    return c.json({ registrations: result.items, pageInfo });
  });
}
