import type { z } from "zod";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SecretBox } from "../lib/secret-box.ts";
import {
  errorFromResponse,
  ProviderAuthError,
  ProviderConflictError,
  ProviderConnectionError,
  ProviderError,
  ProviderValidationError,
  requestIdOf,
} from "./errors.ts";
import { parseRateLimitHeaders, type RateLimitInfo } from "./rate-limit-headers.ts";
import {
  checkedWith,
  DEFAULT_PAGE_SIZE,
  Fulfillment,
  FulfillmentList,
  type FulfillmentWrite,
  FulfillmentWrite as FulfillmentWriteSchema,
  LineItem,
  type LineItemCancel,
  LineItemCancel as LineItemCancelSchema,
  type LineItemWrite,
  LineItemWrite as LineItemWriteSchema,
  MAX_PAGE_SIZE,
  Order,
  type OrderCancel,
  OrderCancel as OrderCancelSchema,
  type OrderCreate,
  OrderCreate as OrderCreateSchema,
  OrderList,
  type OrderUpdate,
  OrderUpdate as OrderUpdateSchema,
  type PageQuery,
  Product,
  type ProductCreate,
  ProductCreate as ProductCreateSchema,
  type ProductReplace,
  ProductReplace as ProductReplaceSchema,
  RegistrationList,
  type RegistrationQuery,
  Store,
} from "./schemas.ts";
import { type TokenInfo, TokenSource } from "./token-cache.ts";
import {
  fetchTransport,
  type Transport,
  type TransportResponse,
  tracedTransport,
  undiciTransport,
} from "./transport.ts";

export interface ResponseInfo {
  storeId: number | undefined;
  method: string;
  path: string;
  status: number;
  rateLimit: RateLimitInfo;
  durationMs: number;
}

export interface ProviderClientOptions {
  /** API base, ending in /v1. */
  baseUrl: string;
  /** Token requests go to `{authUrl}/oauth/token`. */
  authUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  redis: RedisConnection;
  /** Seals the access token the processes share in Redis. */
  secrets: SecretBox;
  redisPrefix?: string;
  timeoutMs?: number;
  /**
   * Replaces the transport of API and token requests (tests count or break requests through
   * it). Without it, API requests go through undici's `request` on a shared keep-alive pool.
   */
  fetch?: typeof fetch;
  /** Called after every response, 429s and errors included (the limiter learns from it). */
  onResponse?: (info: ResponseInfo) => void;
  /**
   * Awaited just before a store's request leaves, once its token is in hand: the limiter
   * records the order in which requests are sent, which is the order the server counts them.
   */
  beforeSend?: (storeId: number) => Promise<void>;
}

interface Call {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  storeId: number | undefined;
  body?: unknown;
  query?: Record<string, string | number | undefined>;
}

/** Money leaves as a number with at most 2 decimals: no float noise reaches the wire. */
const MONEY_KEYS = new Set([
  "shippingMoney",
  "subtotalMoney",
  "taxMoney",
  "totalMoney",
  "tax",
  "price",
]);
/** A JSON.stringify replacer: rounds while serializing, instead of copying the body first. */
function roundMoney(key: string, value: unknown): unknown {
  return MONEY_KEYS.has(key) && typeof value === "number" ? Math.round(value * 100) / 100 : value;
}

/**
 * A write body as JSON, money rounded. A replacer takes JSON.stringify off its fast path (a
 * call per value), and amounts mapped from whole cents need no rounding: the replacer runs only
 * for a body that holds an amount it would change.
 */
function bodyJson(body: unknown): string {
  return hasUnroundedMoney(body) ? JSON.stringify(body, roundMoney) : JSON.stringify(body);
}

function hasUnroundedMoney(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(hasUnroundedMoney);
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === "number") {
      if (MONEY_KEYS.has(key) && Math.round(v * 100) / 100 !== v) return true;
    } else if (hasUnroundedMoney(v)) return true;
  }
  return false;
}

/** Responses may come bare or wrapped (`{ order: … }`); both are accepted. */
function unwrap(body: unknown, key: string): unknown {
  if (body && typeof body === "object" && key in body && !Array.isArray(body)) {
    const inner = (body as Record<string, unknown>)[key];
    if (inner && typeof inner === "object" && !Array.isArray(inner)) return inner;
  }
  return body;
}

/**
 * The provider's API, typed (docs/provider-interface.md; decisions in docs/provider-contract.md).
 *
 * Write bodies are validated before sending (a ProviderValidationError with fields, and no
 * request); responses are parsed tolerantly. The client renews a refused token once and
 * otherwise does not retry: retries belong to the queue, which knows the rate limiter.
 */
export class ProviderClient {
  readonly #o: ProviderClientOptions;
  readonly #tokens: TokenSource;
  readonly #transport: Transport;

  constructor(options: ProviderClientOptions) {
    this.#o = options;
    this.#transport = tracedTransport(
      options.fetch ? fetchTransport(options.fetch) : undiciTransport(),
    );
    this.#tokens = new TokenSource({
      authUrl: options.authUrl,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      audience: options.audience,
      redis: options.redis,
      secrets: options.secrets,
      // Token requests are a few an hour: fetch is fine for them.
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.redisPrefix ? { prefix: options.redisPrefix } : {}),
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    });
  }

  /** The provider environment this client writes to (its API base URL). */
  get baseUrl(): string {
    return this.#o.baseUrl.replace(/\/+$/, "");
  }

  getTokenInfo(): Promise<TokenInfo> {
    return this.#tokens.get();
  }

  // -- orders -----------------------------------------------------------------------------

  async createOrder(body: OrderCreate): Promise<Order> {
    const valid = validate(OrderCreateSchema, body, "POST", "/orders");
    const res = await this.#call({
      method: "POST",
      path: "/orders",
      storeId: valid.storeId,
      body: valid,
    });
    return Order.parse(unwrap(res, "order"));
  }

  async getOrder(storeId: number, orderId: number): Promise<Order> {
    const res = await this.#call({ method: "GET", path: `/orders/${orderId}`, storeId });
    return Order.parse(unwrap(res, "order"));
  }

  async listOrders(
    storeId: number,
    query: PageQuery & {
      sourceOrderId?: string;
      customerEmail?: string;
      orderNameOrNumber?: string;
    },
  ): Promise<OrderList> {
    const res = await this.#call({
      method: "GET",
      path: "/orders",
      storeId,
      query: { ...clampPage(query) },
    });
    return OrderList.parse(res);
  }

  /**
   * Finds the order with this sourceOrderId, or null. The documented call also wants
   * customerEmail and orderNameOrNumber, so they are sent when known; the page is filtered here
   * too, in case the service ignores a filter.
   */
  async findOrderBySourceId(
    storeId: number,
    sourceOrderId: string,
    hints: { customerEmail?: string; orderNameOrNumber?: string } = {},
  ): Promise<Order | null> {
    let after: string | undefined;
    for (let page = 0; page < 20; page++) {
      const list = await this.listOrders(storeId, {
        sourceOrderId,
        ...hints,
        first: MAX_PAGE_SIZE,
        ...(after ? { after } : {}),
      });
      const found = list.orders.find(
        (o) => o.sourceOrderId === sourceOrderId && o.storeId === storeId,
      );
      if (found) return found;
      if (!list.pageInfo.hasNextPage || !list.pageInfo.endCursor) return null;
      after = list.pageInfo.endCursor;
    }
    return null;
  }

  async updateOrder(storeId: number, orderId: number, body: OrderUpdate): Promise<Order | null> {
    const path = `/orders/${orderId}`;
    const valid = validate(OrderUpdateSchema, body, "POST", path);
    const res = await this.#call({ method: "POST", path, storeId, body: valid });
    return res === undefined ? null : Order.parse(unwrap(res, "order"));
  }

  /** Cancels the order; cancelling an order that is already canceled counts as success. */
  async cancelOrder(
    storeId: number,
    orderId: number,
    body: OrderCancel = {},
  ): Promise<Order | null> {
    const path = `/orders/${orderId}`;
    const valid = validate(OrderCancelSchema, body, "DELETE", path);
    try {
      const res = await this.#call({ method: "DELETE", path, storeId, body: valid });
      return res === undefined ? null : Order.parse(unwrap(res, "order"));
    } catch (error) {
      if (error instanceof ProviderConflictError && error.kind === "order_canceled") return null;
      throw error;
    }
  }

  // -- line items -------------------------------------------------------------------------

  async addLineItem(storeId: number, orderId: number, body: LineItemWrite): Promise<LineItem> {
    const path = `/orders/${orderId}/line-items`;
    const valid = validate(LineItemWriteSchema, body, "POST", path);
    const res = await this.#call({ method: "POST", path, storeId, body: valid });
    return LineItem.parse(unwrap(res, "lineItem"));
  }

  async cancelLineItem(
    storeId: number,
    orderId: number,
    lineItemId: number,
    body: LineItemCancel = {},
  ): Promise<LineItem | null> {
    const path = `/orders/${orderId}/line-items/${lineItemId}`;
    const valid = validate(LineItemCancelSchema, body, "DELETE", path);
    const res = await this.#call({ method: "DELETE", path, storeId, body: valid });
    return res === undefined ? null : LineItem.parse(unwrap(res, "lineItem"));
  }

  // -- fulfillments -----------------------------------------------------------------------

  /** Creates or (same sourceFulfillmentId) replaces a fulfillment. */
  async createFulfillment(
    storeId: number,
    orderId: number,
    body: FulfillmentWrite,
  ): Promise<{ fulfillment: Fulfillment; created: boolean }> {
    const path = `/orders/${orderId}/fulfillments`;
    const valid = validate(FulfillmentWriteSchema, body, "POST", path);
    try {
      const { body: res, status } = await this.#callWithStatus({
        method: "POST",
        path,
        storeId,
        body: valid,
      });
      return {
        fulfillment: Fulfillment.parse(unwrap(res, "fulfillment")),
        created: status === 201,
      };
    } catch (error) {
      // A service that refuses a second post of the same fulfillment: it is the same one.
      if (!(error instanceof ProviderConflictError) || error.kind === "order_canceled") throw error;
      const existing = (await this.listFulfillments(storeId, orderId)).find(
        (f) => f.sourceFulfillmentId === valid.sourceFulfillmentId,
      );
      if (!existing) throw error;
      return { fulfillment: existing, created: false };
    }
  }

  async listFulfillments(storeId: number, orderId: number): Promise<Fulfillment[]> {
    const res = await this.#call({
      method: "GET",
      path: `/orders/${orderId}/fulfillments`,
      storeId,
    });
    return Array.isArray(res)
      ? res.map((f) => Fulfillment.parse(f))
      : FulfillmentList.parse(res).fulfillments;
  }

  // -- stores, products, registrations ----------------------------------------------------

  async getStore(storeId: number): Promise<Store> {
    const res = await this.#call({ method: "GET", path: `/stores/${storeId}`, storeId });
    return Store.parse(unwrap(res, "store"));
  }

  async createProduct(body: ProductCreate): Promise<{ product: Product; created: boolean }> {
    const valid = validate(ProductCreateSchema, body, "POST", "/products");
    const { body: res, status } = await this.#callWithStatus({
      method: "POST",
      path: "/products",
      storeId: valid.storeId,
      body: valid,
    });
    return { product: Product.parse(unwrap(res, "product")), created: status === 201 };
  }

  async getProduct(productId: number, storeId?: number): Promise<Product> {
    const res = await this.#call({ method: "GET", path: `/products/${productId}`, storeId });
    return Product.parse(unwrap(res, "product"));
  }

  async replaceProduct(productId: number, body: ProductReplace): Promise<Product> {
    const path = `/products/${productId}`;
    const valid = validate(ProductReplaceSchema, body, "PUT", path);
    const res = await this.#call({ method: "PUT", path, storeId: valid.storeId, body: valid });
    return Product.parse(unwrap(res, "product"));
  }

  /** Deleting twice is fine: the service answers 204 both times. */
  async deleteProduct(productId: number, storeId?: number): Promise<void> {
    await this.#call({ method: "DELETE", path: `/products/${productId}`, storeId });
  }

  async listRegistrations(
    query: RegistrationQuery & { storeId?: number } = {},
  ): Promise<RegistrationList> {
    const { storeId, ...rest } = query;
    const res = await this.#call({
      method: "GET",
      path: "/registrations",
      storeId,
      query: { ...clampPage(rest), ...(storeId ? { storeId } : {}) },
    });
    // A bare array (no pageInfo) is one page with nothing after it.
    return RegistrationList.parse(Array.isArray(res) ? { registrations: res } : res);
  }

  // -- transport --------------------------------------------------------------------------

  async #call(call: Call): Promise<unknown> {
    return (await this.#callWithStatus(call)).body;
  }

  async #callWithStatus(call: Call): Promise<{ body: unknown; status: number }> {
    const token = await this.#tokens.get();
    try {
      return await this.#send(call, token.token);
    } catch (error) {
      // A refused token is renewed once; a second refusal is a configuration problem.
      if (error instanceof ProviderAuthError && error.kind === "invalid_token") {
        await this.#tokens.invalidate(token.token);
        return this.#send(call, (await this.#tokens.get()).token);
      }
      throw error;
    }
  }

  async #send(call: Call, token: string): Promise<{ body: unknown; status: number }> {
    let url = `${this.#o.baseUrl.replace(/\/$/, "")}${call.path}`;
    if (call.query) {
      const search = new URLSearchParams();
      for (const [k, v] of Object.entries(call.query)) {
        if (v !== undefined) search.set(k, String(v));
      }
      const query = search.toString();
      if (query) url += `?${query}`;
    }
    const started = performance.now();
    const hasBody = call.body !== undefined && !(call.method === "DELETE" && isEmpty(call.body));
    // One timer for the request and its body, cleared on the answer: AbortSignal.timeout would
    // keep a timer and build a DOMException for every request, ten seconds after it is done.
    const timeoutMs = this.#o.timeoutMs ?? 10_000;
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new Error(`timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
    const headers: Record<string, string> = {
      authorization: `Bearer ${token}`,
      accept: "application/json",
    };
    if (hasBody) headers["content-type"] = "application/json";
    if (call.storeId !== undefined && this.#o.beforeSend) await this.#o.beforeSend(call.storeId);
    let response: TransportResponse;
    try {
      response = await this.#transport({
        method: call.method,
        url,
        headers,
        ...(hasBody ? { body: bodyJson(call.body) } : {}),
        signal: timeout.signal,
      });
    } catch (cause) {
      clearTimeout(timer);
      throw new ProviderConnectionError(
        `${call.method} ${call.path} got no answer: ${reasonOf(cause, timeout.signal)}`,
        {
          method: call.method,
          path: call.path,
          // A write whose answer was lost may have been applied.
          maybeCommitted: call.method !== "GET",
          cause,
        },
      );
    }
    let text: string;
    try {
      text = await response.text();
    } catch (cause) {
      throw new ProviderConnectionError(`${call.method} ${call.path}: the answer was cut off`, {
        status: response.status,
        method: call.method,
        path: call.path,
        maybeCommitted: call.method !== "GET",
        cause,
      });
    } finally {
      clearTimeout(timer);
    }
    const rateLimit = parseRateLimitHeaders(response.headers);
    this.#o.onResponse?.({
      storeId: call.storeId,
      method: call.method,
      path: call.path,
      status: response.status,
      rateLimit,
      durationMs: performance.now() - started,
    });
    let body: unknown;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const ok = response.status >= 200 && response.status < 300;
    if (!ok) throw errorFromResponse(response, body, { method: call.method, path: call.path });
    if (response.status !== 204 && typeof body === "string") {
      const requestId = requestIdOf(response.headers);
      throw new ProviderError(
        `${call.method} ${call.path} answered ${response.status} without JSON`,
        {
          status: response.status,
          method: call.method,
          path: call.path,
          ...(requestId ? { requestId } : {}),
        },
      );
    }
    return { body, status: response.status };
  }
}

/** The timeout's own message when our timer aborted the request, else the error's. */
function reasonOf(cause: unknown, signal: AbortSignal): string {
  if (signal.aborted && signal.reason instanceof Error) return signal.reason.message;
  return (cause as Error).message;
}

function isEmpty(body: unknown): boolean {
  return body === null || (typeof body === "object" && Object.keys(body as object).length === 0);
}

function clampPage<T extends PageQuery>(query: T): T {
  const out = { ...query };
  if (out.first !== undefined) out.first = Math.min(MAX_PAGE_SIZE, Math.max(1, out.first));
  if (out.last !== undefined) out.last = Math.min(MAX_PAGE_SIZE, Math.max(1, out.last));
  if (out.first === undefined && out.last === undefined && out.before === undefined)
    out.first = DEFAULT_PAGE_SIZE;
  return out;
}

/**
 * Checks a write body against the contract before anything is sent: a body `checkWrite` passed
 * with the same schema is not checked twice.
 */
function validate<S extends z.ZodType>(
  schema: S,
  body: unknown,
  method: string,
  path: string,
): z.infer<S> {
  // Checked by this schema already (the mapping's check) and frozen since: sent as it is.
  if (checkedWith(schema, body)) return body as z.infer<S>;
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const fields = result.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
  throw new ProviderValidationError(
    `${method} ${path} not sent: ${fields.map((f) => `${f.path || "body"}: ${f.message}`).join("; ")}`,
    { method, path, fields },
  );
}
