import type { Attributes } from "@opentelemetry/api";
import {
  GraphqlQueryError,
  HttpThrottlingError,
  Session,
  type Shopify,
} from "@shopify/shopify-api";
import type { Logger } from "pino";
import { inSpan, SpanKind } from "../lib/tracing.ts";
import type { CostThrottle, QueryCost, ThrottleStatus } from "./cost-throttle.ts";

/** An Admin GraphQL answer with errors that retrying will not fix (a bad query, a missing scope). */
export class AdminGraphqlError extends Error {
  override name = "AdminGraphqlError";
  constructor(
    message: string,
    readonly errors: unknown[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Shopify kept answering THROTTLED after every wait the bucket asked for. */
export class AdminThrottledError extends Error {
  override name = "AdminThrottledError";
}

export interface AdminResult<T> {
  data: T;
  cost: QueryCost | null;
}

/** The shop's access token: the current one, and a fresh one after Shopify answered 401. */
export interface AdminToken {
  current(): Promise<string | null>;
  refresh(stale: string): Promise<string | null>;
}

export interface AdminClientOptions {
  shopify: Shopify;
  shop: string;
  /** A fixed token, or one kept fresh (expiring offline tokens). */
  accessToken: string | AdminToken;
  throttle: CostThrottle;
  logger: Logger;
  /** THROTTLED answers retried before giving up (each after the computed wait). */
  maxThrottleRetries?: number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The shop's Admin GraphQL API through `@shopify/shopify-api` (`clients.Graphql`), metered by
 * Shopify's cost-based leaky bucket: before each query it waits until the bucket should hold the
 * query's expected cost; a THROTTLED answer (status 200 with `extensions.code`, or 429) waits
 * for the points to flow back and retries. It never lets the library retry on its own, so every
 * wait is computed from `extensions.cost.throttleStatus`.
 */
export class ShopifyAdminClient {
  readonly shop: string;
  readonly #options: AdminClientOptions;
  readonly #token: AdminToken;
  /** The library's client for the token it was made with. */
  #client: { token: string; graphql: InstanceType<Shopify["clients"]["Graphql"]> } | undefined;
  /** The requested cost each query text had last time: the estimate for the next call. */
  readonly #lastCost = new Map<string, number>();

  constructor(options: AdminClientOptions) {
    this.shop = options.shop;
    this.#options = options;
    const fixed = options.accessToken;
    this.#token =
      typeof fixed === "string" ? { current: async () => fixed, refresh: async () => null } : fixed;
  }

  #graphqlFor(token: string) {
    if (this.#client?.token !== token) {
      const session = new Session({
        id: `offline_${this.shop}`,
        shop: this.shop,
        state: "",
        isOnline: false,
        accessToken: token,
      });
      this.#client = { token, graphql: new this.#options.shopify.clients.Graphql({ session }) };
    }
    return this.#client.graphql;
  }

  /** An Admin call's span: the shop, the method, the GraphQL operation; never its variables. */
  #spanAttributes(query: string): Attributes {
    const operation = OPERATION.exec(query);
    return {
      "http.request.method": "POST",
      "server.address": this.shop,
      "server.port": 443,
      "connector.shop": this.shop,
      ...(operation?.[1] ? { "graphql.operation.type": operation[1] } : {}),
      ...(operation?.[2] ? { "graphql.operation.name": operation[2] } : {}),
    };
  }

  async #currentToken(): Promise<string> {
    const token = await this.#token.current();
    if (!token) throw new ShopifyTokenError(this.shop);
    return token;
  }

  async request<T>(
    query: string,
    variables: Record<string, unknown> = {},
    options: { expectedCost?: number } = {},
  ): Promise<AdminResult<T>> {
    const { throttle, logger } = this.#options;
    const sleep = this.#options.sleep ?? defaultSleep;
    const maxRetries = this.#options.maxThrottleRetries ?? 20;
    let expected = options.expectedCost ?? this.#lastCost.get(query) ?? 0;
    let token = await this.#currentToken();
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const wait = throttle.waitMs(this.shop, expected);
      if (wait > 0) {
        logger.debug({ shop: this.shop, waitMs: wait, expected }, "waiting for Shopify query cost");
        await sleep(wait);
      }
      try {
        const client = this.#graphqlFor(token);
        const response = await inSpan(
          graphqlSpanName(query),
          { kind: SpanKind.CLIENT, attributes: this.#spanAttributes(query) },
          () => client.request(query, { variables, retries: 0 }),
        );
        const cost = readCost(response.extensions);
        if (cost) {
          throttle.observe(this.shop, cost.throttleStatus);
          this.#lastCost.set(query, cost.requestedQueryCost);
        }
        return { data: response.data as T, cost };
      } catch (error) {
        // 401: the token expired or was replaced; one refresh, then the same query again.
        if (!refreshed && isUnauthorized(error)) {
          refreshed = true;
          const fresh = await this.#token.refresh(token);
          if (!fresh) throw new ShopifyTokenError(this.shop);
          token = fresh;
          continue;
        }
        const throttled = throttledBy(error);
        if (!throttled) throw translate(error);
        if (attempt >= maxRetries) {
          throw new AdminThrottledError(
            `Shopify throttled ${this.shop} ${attempt + 1} times in a row`,
            { cause: error },
          );
        }
        if (throttled.requested !== null) {
          expected = throttled.requested;
          this.#lastCost.set(query, expected);
        }
        const ms = throttle.waitAfterThrottle(this.shop, expected, throttled.status ?? undefined);
        const retryAfterMs = throttled.retryAfterSeconds ? throttled.retryAfterSeconds * 1000 : 0;
        logger.info(
          { shop: this.shop, waitMs: Math.max(ms, retryAfterMs), attempt },
          "Shopify answered THROTTLED; waiting for the bucket",
        );
        await sleep(Math.max(ms, retryAfterMs));
      }
    }
  }
}

/** A query's operation type and name: `query OrderPage(` → query, OrderPage. */
const OPERATION = /^\s*(query|mutation|subscription)\b\s*([A-Za-z_]\w*)?/;

/** GraphQL's span name: `<type> <name>`, or the type alone (an anonymous query). */
function graphqlSpanName(query: string): string {
  const operation = OPERATION.exec(query);
  if (!operation) return "query";
  return operation[2] ? `${operation[1]} ${operation[2]}` : (operation[1] as string);
}

/**
 * What every failure only the merchant can fix by reopening the app says (the token errors and
 * the shop's "reconnect needed" pause): the reopening retries the dead letters that carry it.
 */
export const RECONNECT_HINT = "open the app from the Shopify admin";

/**
 * The shop has no access token that Shopify accepts (its refresh token refused or expired, a
 * non-expiring token Shopify no longer takes, or the app uninstalled). Only the merchant can
 * fix it, by opening the app from the Shopify admin; retrying does not. The message says so
 * and never carries a token.
 */
export class ShopifyTokenError extends Error {
  override name = "ShopifyTokenError";

  constructor(readonly shop: string) {
    super(
      `Shopify no longer accepts the app's token for ${shop}: ${RECONNECT_HINT} to reconnect it`,
    );
  }
}

function isUnauthorized(error: unknown): boolean {
  const e = error as { response?: { code?: number; status?: number }; code?: number };
  return e?.response?.code === 401 || e?.response?.status === 401;
}

interface Throttled {
  requested: number | null;
  status: ThrottleStatus | null;
  retryAfterSeconds: number | null;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v);

function readCost(extensions: unknown): QueryCost | null {
  if (!isObject(extensions) || !isObject(extensions.cost)) return null;
  const cost = extensions.cost;
  const status = cost.throttleStatus;
  if (!isObject(status)) return null;
  return {
    requestedQueryCost: Number(cost.requestedQueryCost ?? 0),
    actualQueryCost: cost.actualQueryCost === null ? null : Number(cost.actualQueryCost ?? 0),
    throttleStatus: {
      maximumAvailable: Number(status.maximumAvailable),
      currentlyAvailable: Number(status.currentlyAvailable),
      restoreRate: Number(status.restoreRate),
    },
  };
}

function graphqlErrors(body: unknown): unknown[] {
  if (!isObject(body) || !isObject(body.errors)) return [];
  const list = body.errors.graphQLErrors;
  return Array.isArray(list) ? list : [];
}

/** THROTTLED at status 200 (GraphqlQueryError) or 429 (HttpThrottlingError); else null. */
function throttledBy(error: unknown): Throttled | null {
  if (error instanceof GraphqlQueryError) {
    const codes = graphqlErrors(error.body).map((e) =>
      isObject(e) && isObject(e.extensions) ? e.extensions.code : undefined,
    );
    if (!codes.includes("THROTTLED")) return null;
    const cost = readCost(error.body?.extensions);
    return {
      requested: cost?.requestedQueryCost ?? null,
      status: cost?.throttleStatus ?? null,
      retryAfterSeconds: null,
    };
  }
  if (error instanceof HttpThrottlingError) {
    return {
      requested: null,
      status: null,
      retryAfterSeconds: error.response.retryAfter ?? null,
    };
  }
  return null;
}

function translate(error: unknown): Error {
  if (error instanceof GraphqlQueryError) {
    const errors = graphqlErrors(error.body);
    return new AdminGraphqlError(`Shopify Admin GraphQL error: ${error.message}`, errors, {
      cause: error,
    });
  }
  return error instanceof Error ? error : new Error(String(error));
}
