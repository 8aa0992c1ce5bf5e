import { randomUUID } from "node:crypto";
import { type Context, Hono } from "hono";
import { sandboxControlRoutes } from "./control.ts";
import { EventSender, eventControlRoutes, type WebhookSubscriber } from "./events.ts";
import { FaultDice, type SandboxFaults } from "./faults.ts";
import { check, notFound, SandboxHttpError } from "./http-error.ts";
import { SCOPES, type Scope, TokenRequest } from "./interface.ts";
import { OrderBook } from "./orders.ts";
import { ProductBook } from "./products.ts";
import {
  addRegistrations,
  type RegistrationInput,
  type StoredRegistration,
  seedRegistrations,
} from "./registrations.ts";
import { type Env, readJson } from "./request.ts";
import { RollingWindow } from "./rolling-window.ts";
import { catalogRoutes, orderRoutes, type RouteKit } from "./routes.ts";
import { SandboxFile } from "./sandbox-file.ts";
import { TokenIssuer } from "./tokens.ts";

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
  /**
   * How the registration list answers where the interface leaves room (docs/provider-contract.md,
   * Registrations), so a client's tolerance can be tested over HTTP. Default: as we chose.
   * `order` fixes the order and ignores `orderBy` (a service that does not sort on request);
   * `maxPageSize` clamps pages below 100; `pageInfo: "relay"` answers `hasPreviousPage` only
   * when paging backward and `hasNextPage` only when paging forward (false otherwise, as the
   * Relay cursor convention allows); `"missing"` answers without `pageInfo`, `"bare"` with a
   * bare array of registrations. Broken services, for the client's guards: `ignoreFilters`
   * answers every registration whatever the filters; `stuckCursor` ignores `after` and `before`
   * (every page is the first).
   */
  registrationListing?: {
    order?: "asc" | "desc";
    maxPageSize?: number;
    pageInfo?: "full" | "relay" | "missing" | "bare";
    ignoreFilters?: boolean;
    stuckCursor?: boolean;
  };
  audience?: string;
  /**
   * Mounts `/_sandbox/*` (state, faults, budget consumption, and the provider's events: claims,
   * registrations, signed webhook deliveries) for harnesses in other processes and tests.
   */
  control?: boolean;
  /** Where the provider's webhooks go and the secret they are signed with (or PUT /_sandbox/webhooks). */
  webhooks?: Partial<WebhookSubscriber> & { url: string; secret: string };
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
  /** The provider's outbound webhooks: subscriber, claims, deliveries. */
  events: EventSender;
  /** Records registrations for a store, as its customers would make them. */
  addRegistrations(storeId: number, registrations: RegistrationInput[]): StoredRegistration[];
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

  const events = new EventSender();
  if (options.webhooks) {
    events.configure({ maxAttempts: 4, backoffMs: 1_000, ...options.webhooks });
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

  const kit: RouteKit = { state, admit, committed, options };
  orderRoutes(v1, kit);
  catalogRoutes(v1, kit);

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
        stores,
      }),
    );
    app.route("/_sandbox", eventControlRoutes(state, events, stores));
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
    events,
    addRegistrations: (storeId, registrations) =>
      addRegistrations(state.registrations, storeId, registrations),
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
