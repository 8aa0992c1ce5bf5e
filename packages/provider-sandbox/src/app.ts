import { randomUUID } from "node:crypto";
import type { HttpBindings } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { sandboxControlRoutes } from "./control.ts";
import { FaultDice, type SandboxFaults } from "./faults.ts";
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
  SCOPES,
  type Scope,
  TokenRequest,
} from "./interface.ts";
import { OrderBook, orderView } from "./orders.ts";
import { decodeCursor, paginate } from "./paginate.ts";
import { ProductBook, productView } from "./products.ts";
import { type StoredRegistration, seedRegistrations } from "./registrations.ts";
import { RollingWindow } from "./rolling-window.ts";
import { SandboxFile } from "./sandbox-file.ts";
import { type TokenClaims, TokenIssuer } from "./tokens.ts";

export interface SandboxOptions {
  host?: string;
  port?: number;
  clientId?: string;
  clientSecret?: string;
  stores?: number[];
  storeCurrency?: Record<number, string>;
  storeTimezone?: Record<number, string>;
  /** Protection variant IDs per store: a line with one makes the order protected. */
  protectionVariantIds?: Record<number, string[]>;
  /**
   * The merchant's fulfillment locations configured with the provider, per store. When a store
   * has a list, a fulfillment from any other location is refused with 400 naming
   * `fulfillmentLocationId` (what a location mapping mistake looks like); no list: any.
   */
  fulfillmentLocations?: Record<number, number[]>;
  rateLimit?: number;
  windowMs?: number;
  tokenRateLimit?: number;
  tokenTtlSeconds?: number;
  scopes?: Scope[];
  faults?: SandboxFaults;
  seedRegistrations?: number;
  audience?: string;
  /** Mounts `/_sandbox/*` (state, faults, budget consumption) for harnesses in other processes. */
  control?: boolean;
  /**
   * Keeps the orders and the IDs handed out in this SQLite file, so a restart continues where
   * it stopped (`npm start` puts it beside the connector's database). None: in memory only.
   */
  statePath?: string;
}

interface Client {
  secret: string;
  stores: number[];
  scopes: Scope[];
}

export interface Arrival {
  storeId: number;
  at: number;
  method: string;
  path: string;
  status: number;
}

/** What tests and benchmarks can inspect. */
export class SandboxState {
  readonly orders: OrderBook;
  readonly products = new ProductBook();
  readonly registrations: StoredRegistration[] = [];
  readonly arrivals: Arrival[] = [];
  readonly counters = {
    tokenRequests: 0,
    rateLimited: 0,
    faults: 0,
    /** Injected faults by kind: error (500), slow, drop (answer lost after commit), extra429. */
    faultsByKind: { error: 0, slow: 0, drop: 0, extra429: 0 },
    writes: {} as Record<string, number>,
  };

  readonly file: SandboxFile | undefined;

  constructor(protectionVariantIds: (storeId: number) => string[], statePath?: string) {
    this.file = statePath ? new SandboxFile(statePath) : undefined;
    this.orders = new OrderBook({
      protectionVariantIds,
      ...(this.file ? { file: this.file } : {}),
    });
  }

  /** Admitted requests per store (429s excluded). */
  admittedFor(storeId: number): Arrival[] {
    return this.arrivals.filter((a) => a.storeId === storeId && a.status !== 429);
  }

  /** The most requests admitted for a store in any window of `windowMs` (as counted at arrival). */
  maxInAnyWindow(storeId: number, windowMs: number): number {
    const times = this.admittedFor(storeId)
      .map((a) => a.at)
      .sort((a, b) => a - b);
    let max = 0;
    let start = 0;
    for (let end = 0; end < times.length; end++) {
      while ((times[end] as number) - (times[start] as number) >= windowMs) start++;
      max = Math.max(max, end - start + 1);
    }
    return max;
  }
}

/** Which scope each route needs (docs/provider-contract.md). */
type Env = {
  Bindings: HttpBindings;
  Variables: { claims: TokenClaims; arrivedAt: number; requestId: string; storeId?: number };
};

export interface SandboxApp {
  app: Hono<Env>;
  state: SandboxState;
  audience: string;
  clientId: string;
  clientSecret: string;
  stores: number[];
  setFaults(faults: SandboxFaults): void;
  consume(storeId: number, count: number): void;
  issueToken(options?: {
    scopes?: Scope[];
    stores?: number[];
    expiresInSeconds?: number;
    clientId?: string;
  }): Promise<string>;
  addClient(clientId: string, clientSecret: string, stores: number[], scopes?: Scope[]): void;
}

export function createSandboxApp(options: SandboxOptions = {}): SandboxApp {
  const stores = options.stores ?? [1001];
  const clientId = options.clientId ?? `sandbox-${randomUUID().slice(0, 8)}`;
  const clientSecret = options.clientSecret ?? randomUUID().replaceAll("-", "");
  const audience = options.audience ?? "https://api.sandbox.local/v1";
  const windowMs = options.windowMs ?? 60_000;
  const limiter = new RollingWindow(options.rateLimit ?? 100, windowMs);
  const tokenLimiter = new RollingWindow(options.tokenRateLimit ?? 30, windowMs);
  const tokens = new TokenIssuer(audience);
  const dice = new FaultDice();
  dice.set(options.faults ?? {});
  const clients = new Map<string, Client>([
    [clientId, { secret: clientSecret, stores, scopes: options.scopes ?? [...SCOPES] }],
  ]);
  const state = new SandboxState(
    (storeId) => options.protectionVariantIds?.[storeId] ?? [],
    options.statePath,
  );
  for (const storeId of stores) {
    state.products.seedPlatformProduct(storeId, `platform-product-${storeId}`);
    state.registrations.push(...seedRegistrations(storeId, options.seedRegistrations ?? 0));
  }

  const app = new Hono<Env>();

  app.onError((error, c) => {
    if (error instanceof SandboxHttpError) return errorJson(c, error);
    return errorJson(
      c,
      new SandboxHttpError(500, "internal_error", `sandbox failure: ${error.message}`),
    );
  });

  // -- authentication ---------------------------------------------------------------------
  app.post("/oauth/token", async (c) => {
    state.counters.tokenRequests++;
    const body = check(TokenRequest, await readJson(c));
    const decision = tokenLimiter.admit(body.client_id, Date.now());
    if (!decision.admitted) {
      c.header("Retry-After", String(Math.max(1, Math.ceil(decision.resetMs / 1000))));
      return c.json(
        { error: "too_many_requests", error_description: "token requests are rate-limited" },
        429,
      );
    }
    const client = clients.get(body.client_id);
    if (!client || client.secret !== body.client_secret) {
      return c.json(
        { error: "invalid_client", error_description: "unknown client or wrong secret" },
        401,
      );
    }
    if (body.audience !== audience) {
      return c.json(
        { error: "access_denied", error_description: `unknown audience; use ${audience}` },
        403,
      );
    }
    const expiresIn = options.tokenTtlSeconds ?? 86_400;
    const token = await tokens.issue({
      clientId: body.client_id,
      scopes: client.scopes,
      storeIds: client.stores,
      expiresInSeconds: expiresIn,
    });
    return c.json({
      access_token: token,
      scope: client.scopes.join(" "),
      expires_in: expiresIn,
      token_type: "Bearer",
    });
  });

  // -- every /v1 route: token, faults, request id ------------------------------------------
  const v1 = new Hono<Env>();
  v1.use(async (c, next) => {
    c.set("arrivedAt", Date.now());
    c.set("requestId", randomUUID());
    c.header("X-Request-Id", c.get("requestId"));
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header);
    if (!match?.[1]) {
      c.header("WWW-Authenticate", 'Bearer error="invalid_token"');
      throw new SandboxHttpError(401, "invalid_token", "a bearer token is required");
    }
    const claims = await tokens.verify(match[1]);
    if ("invalid" in claims) {
      c.header("WWW-Authenticate", 'Bearer error="invalid_token"');
      throw new SandboxHttpError(401, "invalid_token", claims.invalid);
    }
    c.set("claims", claims);
    await next();
  });

  /** Scope, store coverage, rate limit (at arrival) and faults, in that order. */
  const admit = async (c: Context<Env>, scope: Scope, storeId: number | undefined) => {
    const claims = c.get("claims");
    const store = storeId ?? claims.storeIds[0];
    if (store === undefined || !claims.storeIds.includes(store)) throw notFound("store");
    c.set("storeId", store);
    if (!claims.scopes.includes(scope)) {
      throw new SandboxHttpError(403, "insufficient_scope", `the token lacks the ${scope} scope`);
    }
    const arrivedAt = c.get("arrivedAt");
    if (dice.roll("extra429Rate")) {
      state.counters.faults++;
      state.counters.faultsByKind.extra429++;
      limitHeaders(c, { remaining: 0, resetMs: 1000 });
      c.header("Retry-After", "1");
      throw new SandboxHttpError(429, "rate_limited", "rate limit exceeded (injected)");
    }
    const decision = limiter.admit(String(store), arrivedAt);
    limitHeaders(c, decision);
    if (!decision.admitted) {
      state.counters.rateLimited++;
      c.header("Retry-After", String(Math.max(1, Math.ceil(decision.resetMs / 1000))));
      throw new SandboxHttpError(
        429,
        "rate_limited",
        `rate limit of ${limiter.limit} requests per ${windowMs} ms exceeded for store ${store}`,
      );
    }
    if (dice.roll("errorRate")) {
      state.counters.faults++;
      state.counters.faultsByKind.error++;
      throw new SandboxHttpError(500, "internal_error", "injected server error");
    }
    if (dice.roll("slowRate")) {
      state.counters.faultsByKind.slow++;
      await new Promise((resolve) => setTimeout(resolve, dice.settings.slowMs ?? 2_000));
    }
    return store;
  };

  const limitHeaders = (c: Context<Env>, d: { remaining: number; resetMs: number }) => {
    c.header("RateLimit-Limit", String(limiter.limit));
    c.header("RateLimit-Remaining", String(d.remaining));
    c.header("RateLimit-Reset", String(Math.ceil(d.resetMs / 1000)));
  };

  /** Answers a committed write, or drops the answer after the commit (fault injection). */
  const committed = (
    c: Context<Env>,
    kind: string,
    body: unknown,
    status: 200 | 201 | 204 = 200,
  ) => {
    state.counters.writes[kind] = (state.counters.writes[kind] ?? 0) + 1;
    if (dice.roll("dropAfterCommitRate")) {
      state.counters.faults++;
      state.counters.faultsByKind.drop++;
      c.env?.incoming?.socket?.destroy();
    }
    return status === 204 ? c.body(null, 204) : c.json(body as object, status);
  };

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
    const list = state.registrations.filter(
      (r) =>
        r.storeId === store &&
        (!q.customerEmail || r.customerEmail === q.customerEmail) &&
        (!q.channelName || r.channelName === q.channelName) &&
        (!q.externalId || r.externalId === q.externalId),
    );
    const result = paginate(list, (r) => r.registrationId, q);
    return c.json({ registrations: result.items, pageInfo: result.pageInfo });
  });

  // Arrivals are logged after the answer is known, with the arrival time.
  app.use("/v1/*", async (c, next) => {
    await next();
    const storeId = (c as unknown as Context<Env>).get("storeId");
    if (storeId !== undefined) {
      state.arrivals.push({
        storeId,
        at: (c as unknown as Context<Env>).get("arrivedAt"),
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
      });
    }
  });
  app.route("/v1", v1);
  if (options.control) {
    app.route(
      "/_sandbox",
      sandboxControlRoutes({
        state,
        setFaults: (faults) => dice.set(faults),
        consume: (storeId, count) => limiter.consume(String(storeId), count, Date.now()),
      }),
    );
  }

  return {
    app,
    state,
    audience,
    clientId,
    clientSecret,
    stores,
    setFaults: (faults) => dice.set(faults),
    consume: (storeId, count) => limiter.consume(String(storeId), count, Date.now()),
    issueToken: (o = {}) =>
      tokens.issue({
        clientId: o.clientId ?? clientId,
        scopes: o.scopes ?? options.scopes ?? [...SCOPES],
        storeIds: o.stores ?? stores,
        expiresInSeconds: o.expiresInSeconds ?? options.tokenTtlSeconds ?? 86_400,
      }),
    addClient: (id, secret, clientStores, scopes) => {
      clients.set(id, { secret, stores: clientStores, scopes: scopes ?? [...SCOPES] });
    },
  };
}

function errorJson(c: Context, error: SandboxHttpError) {
  const requestId = (c as Context<Env>).get("requestId") ?? randomUUID();
  c.header("X-Request-Id", requestId);
  return c.json(
    {
      error: {
        code: error.code,
        message: error.message,
        ...(error.fields ? { fields: error.fields } : {}),
        ...(error.extra ?? {}),
      },
      requestId,
    },
    error.status,
  );
}

async function readJson(c: Context, optional = false): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") {
    if (optional) return undefined;
    throw new SandboxHttpError(400, "validation_error", "a JSON body is required", [
      { path: "", message: "required" },
    ]);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SandboxHttpError(400, "validation_error", "the body is not valid JSON", [
      { path: "", message: "invalid JSON" },
    ]);
  }
}

function pageParams(query: Record<string, string>) {
  for (const name of ["after", "before"] as const) {
    const cursor = query[name];
    if (cursor !== undefined && decodeCursor(cursor) === null) {
      throw new SandboxHttpError(400, "validation_error", `${name} is not a valid cursor`, [
        { path: name, message: "invalid cursor" },
      ]);
    }
  }
  const int = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  return {
    ...pick(query, ["after", "before", "orderBy"]),
    ...(query.first !== undefined ? { first: int(query.first) } : {}),
    ...(query.last !== undefined ? { last: int(query.last) } : {}),
  };
}

function pick(query: Record<string, string>, names: string[]) {
  return Object.fromEntries(names.filter((n) => query[n] !== undefined).map((n) => [n, query[n]]));
}
