import { RequestedTokenType, type Session } from "@shopify/shopify-api";
import { type Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Logger } from "pino";
import type { RuntimeConfig } from "../config/runtime-config.ts";
import type { ClaimsSettings } from "../features/claims/settings.ts";
import type { RegistrationEvents } from "../features/registrations/settings.ts";
import type { ProviderEventIngest } from "../ingest/provider-event-ingest.ts";
import type { WebhookIngest } from "../ingest/webhook-ingest.ts";
import { withDeadline } from "../lib/deadline.ts";
import { type FailureCause, FailureDigest, lineLevel } from "../lib/failure-digest.ts";
import { errorResponse } from "../lib/http-errors.ts";
import { errorText } from "../lib/redact.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { ConnectorMetrics } from "../metrics/index.ts";
import { metricsRoute } from "../metrics/index.ts";
import { type OrderQueues, SYNC_PRIORITY_LEVELS } from "../queue/order-queues.ts";
import type { SettingsService } from "../settings/index.ts";
import type { Shopify } from "../shopify/index.ts";
import { OAuthStateStore } from "../shopify/install/index.ts";
import { needsReconnect, type ShopTokens } from "../shopify/install/shop-tokens.ts";
import type { ShopRecord, ShopRepository } from "../store/index.ts";
import type { AdminContext } from "./admin/admin-deps.ts";
import { createAdminApp } from "./admin/index.ts";
import { contentTypeOf, embeddedConfig } from "./install/embedded.ts";
import { oauthRoutes, ShopSessionCookie } from "./install/index.ts";
import { providerWebhookRoutes } from "./provider-webhook-route.ts";
import { BodyBudget, readBodyFirst } from "./request-body.ts";
import { settingsRoutes } from "./settings/index.ts";
import { INGEST_DEADLINE_MS, webhookRoutes } from "./webhook-route.ts";

/**
 * What the web app serves from, composed by its role (src/app/web.ts): the receiver's ingest,
 * the settings service, the admin area's deps, and what health, metrics and install read.
 */
export interface WebParts {
  config: RuntimeConfig;
  logger: Logger;
  metrics: ConnectorMetrics;
  shopify: Shopify;
  /** OAuth states (and the admin area's Redis). */
  redis: RedisConnection;
  prefix: string;
  /** The receiver's fail-fast connection, which readiness checks. */
  ingestRedis: RedisConnection;
  shops: ShopRepository;
  /** The sync and dead-letter queues, for the depth gauge. */
  queues: OrderQueues;
  admin: AdminContext;
  ingest: WebhookIngest;
  /** The provider's webhooks (claims, registrations), up to their queue. */
  providerWebhooks: Pick<ProviderEventIngest, "receive">;
  settings: SettingsService;
  /** The settings page's Claims section. */
  claimsSettings: ClaimsSettings;
  /** The Registrations tab's events as the provider's webhooks reported them. */
  registrationEvents: RegistrationEvents;
  /** The shop's Shopify token, refreshed when due: null when Shopify no longer accepts it. */
  shopTokens: Pick<ShopTokens, "current">;
  /** Completes an install (OAuth callback or token exchange): the shop as stored. */
  installed(session: Session): Promise<ShopRecord>;
  /** Stops what the composition started for this app (queues, schedulers). */
  close(): Promise<void>;
}

const DEPTH_STATES = ["waiting", "prioritized", "active", "delayed", "failed"] as const;

/**
 * Depth of the sync and dead-letter queues, for the connector_queue_jobs gauge: each sync shard
 * is its own `queue` label (`sync`, or `sync-1of3` …).
 */
async function queueDepths(ctx: Pick<WebParts, "queues">) {
  const rows: { queue: string; state: string; count: number }[] = [];
  for (const queue of [...(await ctx.queues.allSyncQueues()), ctx.queues.deadLetter]) {
    const counts = await queue.getJobCounts(...DEPTH_STATES);
    for (const state of DEPTH_STATES) {
      rows.push({ queue: queue.name, state, count: counts[state] ?? 0 });
    }
  }
  return rows;
}

/** Sync jobs waiting per shard and priority, for the connector_sync_queue_priority_jobs gauge. */
async function priorityDepths(ctx: Pick<WebParts, "queues">) {
  const rows: { queue: string; priority: string; count: number }[] = [];
  const levels = Object.entries(SYNC_PRIORITY_LEVELS);
  for (const queue of await ctx.queues.allSyncQueues()) {
    const counts = await queue.getCountsPerPriority(levels.map(([, level]) => level));
    for (const [priority, level] of levels) {
      rows.push({ queue: queue.name, priority, count: counts[level] ?? 0 });
    }
  }
  return rows;
}

export interface WebApp {
  app: Hono;
  close(): Promise<void>;
}

/** The largest body of any route but the webhooks': login, settings forms, admin filters. */
export const FORM_MAX_BYTES = 8 * 1024;

/**
 * How long no body may be refused for the budget before a burst counts as over: its next
 * refusal is then said again at warn.
 */
export const BODIES_QUIET_MS = 60_000;

/** Bodies answered 503 for the budget of bodies arriving at once, as the digest counts them. */
function bodiesRefused(maxBytes: number): FailureCause {
  return {
    shop: "",
    signature: "request-bodies-max-bytes",
    wording: {
      subject: "request bodies",
      still: "still answered 503",
      unit: "bodies",
      field: "bodiesRefused",
      level: "warn",
      after: `the bodies arriving at once passed REQUEST_BODIES_MAX_BYTES (${maxBytes} bytes); Shopify and the provider send theirs again`,
    },
  };
}

/**
 * The web app, HTTP only: webhooks in; install, settings, health, metrics and the admin area out.
 * Its parts (the receiver's ingest, the settings service, what an install completes) are
 * composed by the web role (src/app/web.ts).
 */
export function createWebApp(
  ctx: WebParts,
  hooks: {
    onOutcome?: (topic: string, outcome: string) => void;
  } = {},
): WebApp {
  const { shopify, ingest } = ctx;
  const closers: (() => Promise<void>)[] = [() => ctx.close()];
  const app = new Hono();
  app.onError((error, c) => {
    // Middleware refusals (bearer auth, body limits) carry their own response.
    if (error instanceof HTTPException) return error.getResponse();
    ctx.logger.error({ err: { message: errorText(error), name: error.name } }, "unhandled error");
    return errorResponse(c, 500, "internal_error", "something went wrong; the error was logged");
  });
  app.notFound((c) =>
    errorResponse(c, 404, "not_found", `no route for ${c.req.method} ${c.req.path}`),
  );
  // One budget for every body read before its sender is known, here and in the webhook routes.
  // A refusal is said once per burst (a line when it starts, a summary a minute, a line once
  // BODIES_QUIET_MS have passed without one), never with the body; each is counted in /metrics.
  const bodiesMax = ctx.config.env.REQUEST_BODIES_MAX_BYTES;
  const bodiesLog = ctx.logger.child({ component: "request-bodies" });
  const bodiesDigest = new FailureDigest(bodiesLog, { quietMs: BODIES_QUIET_MS }).start();
  closers.push(async () => bodiesDigest.stop());
  const bodiesCause = bodiesRefused(bodiesMax);
  const bodies = new BodyBudget(bodiesMax, (held, wanted) => {
    ctx.metrics.bodiesRefused.inc();
    const detail = `${held} bytes held, ${wanted} more asked`;
    const level = lineLevel(bodiesDigest, bodiesCause, detail);
    if (level === "debug" && !bodiesLog.isLevelEnabled("debug")) return;
    bodiesLog[level](
      { bytesHeld: held, bytesAsked: wanted, maxBytes: bodiesMax },
      `request bodies arriving at once would pass REQUEST_BODIES_MAX_BYTES (${bodiesMax} bytes): answering 503 with Retry-After until some have arrived; Shopify and the provider send theirs again`,
    );
  });
  ctx.metrics.trackBodyBytes(() => bodies.held);
  // Every body but a webhook's is a small form or JSON filter: refused past 8 KB from its
  // Content-Length before a byte is read, or as soon as a chunked body passes it, and read whole
  // within REQUEST_BODY_TIMEOUT_MS (408 after) before any route authenticates its sender. The
  // webhook routes keep their own limit (WEBHOOK_MAX_BYTES), and so does the settings page's
  // product file upload when it is multipart (its route caps the file once the sender is known:
  // the settings sign-in reads no multipart body, so nothing larger than 8 KB is read before that).
  const smallBodies = readBodyFirst({
    maxBytes: FORM_MAX_BYTES,
    arrivalMs: ctx.config.env.REQUEST_BODY_TIMEOUT_MS,
    budget: bodies,
    tooLarge: (c) =>
      errorResponse(
        c,
        413,
        "payload_too_large",
        `request bodies are limited to ${FORM_MAX_BYTES} bytes`,
      ),
  });
  const ownLimit = (c: Context) =>
    c.req.path.startsWith("/webhooks/") ||
    (c.req.path === "/settings/catalog" && contentTypeOf(c) === "multipart/form-data");
  app.use("*", (c, next) => (ownLimit(c) ? next() : smallBodies(c, next)));
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/readyz", async (c) => {
    const checks: Record<string, boolean> = {};
    try {
      checks.redis =
        (await withDeadline(ctx.ingestRedis.ping(), INGEST_DEADLINE_MS, "Redis PING")) === "PONG";
    } catch {
      checks.redis = false;
    }
    // Named by the database in use: DATABASE_URL's Postgres, else the SQLite file.
    const database = ctx.config.env.DATABASE_URL ? "postgres" : "sqlite";
    try {
      checks[database] = await ctx.shops.reachable();
    } catch {
      checks[database] = false;
    }
    const ready = Object.values(checks).every(Boolean);
    return c.json({ ready, checks }, ready ? 200 : 503);
  });
  ctx.metrics.trackQueues(() => queueDepths(ctx));
  ctx.metrics.trackPriorities(() => priorityDepths(ctx));
  ctx.metrics.trackSubscriptionFailures(
    async () => (await ctx.shops.listShops()).filter((s) => s.subscriptionsError !== null).length,
  );
  app.route("/", metricsRoute(ctx.metrics, ctx.config.env.METRICS_TOKEN));
  app.route("/admin", createAdminApp({ ctx: ctx.admin, onClose: (close) => closers.push(close) }));
  const cookie = new ShopSessionCookie(ctx.config.encryptionKey, ctx.config.appUrl);
  const { installed } = ctx;
  const installLog = ctx.logger.child({ component: "install" });
  /**
   * A shop the connector has a working expiring token for needs no exchange. A non-expiring
   * one is exchanged when the merchant opens the app (Shopify refuses them from 2027-01-01),
   * and a token whose refresh Shopify refuses now (the shop sat idle past the refresh token's
   * 90 days) is replaced on this page load rather than after the page has failed.
   */
  const holdsToken = async (shop: ShopRecord | null): Promise<boolean> => {
    if (
      shop === null ||
      shop.status === "uninstalled" ||
      shop.accessTokenSealed === null ||
      shop.refreshTokenSealed === null ||
      needsReconnect(shop.pausedReason)
    )
      return false;
    // Shopify unreachable: the page loads with what is stored, as before.
    return (await ctx.shopTokens.current(shop.shop).catch(() => "unknown")) !== null;
  };
  app.route(
    "/",
    oauthRoutes({
      shopify,
      states: new OAuthStateStore(ctx.redis, ctx.prefix),
      cookie,
      shops: ctx.shops,
      appUrlIsHttps: ctx.config.appUrl.startsWith("https://"),
      logger: installLog,
      ...(ctx.config.env.SHOPIFY_ADMIN_URL ? { standInUrl: ctx.config.env.SHOPIFY_ADMIN_URL } : {}),
      onInstalled: async (session) => (await installed(session)).installedAt ?? "",
    }),
  );
  app.route(
    "/settings",
    settingsRoutes({
      service: ctx.settings,
      claims: ctx.claimsSettings,
      registrationEvents: ctx.registrationEvents,
      shopify,
      cookie,
      shops: ctx.shops,
      appOrigin: new URL(ctx.config.appUrl).origin,
      logger: ctx.logger.child({ component: "settings" }),
      embedded: embeddedConfig(ctx.config.shopifyApiKey, ctx.config.env.SHOPIFY_ADMIN_URL),
      installByTokenExchange: async (shop, sessionToken) => {
        const known = await ctx.shops.getShop(shop);
        if (known && (await holdsToken(known))) {
          return { ok: true, shop: (await ctx.shops.getShop(shop)) ?? known };
        }
        const log = installLog.child({ shop });
        try {
          const { session } = await shopify.auth.tokenExchange({
            shop,
            sessionToken,
            requestedTokenType: RequestedTokenType.OfflineAccessToken,
            expiring: true,
          });
          const record = await installed(session);
          log.info("app installed through the Shopify admin (token exchange)");
          return { ok: true, shop: record };
        } catch (error) {
          log.warn(
            { err: { message: errorText(error) } },
            "token exchange refused: the shop stays without a token",
          );
          return {
            ok: false,
            message:
              "Shopify did not hand over access for this shop. Close the app and open it again from your Shopify admin; if this persists, reinstall the app.",
          };
        }
      },
    }),
  );
  const webhookLog = ctx.logger.child({ component: "webhooks" });
  const webhookFailures = new FailureDigest(webhookLog).start();
  closers.push(async () => webhookFailures.stop());
  app.route(
    "/",
    webhookRoutes({
      secret: ctx.config.shopifyApiSecret,
      ingest,
      logger: webhookLog,
      maxBytes: ctx.config.env.WEBHOOK_MAX_BYTES,
      bodyTimeoutMs: ctx.config.env.REQUEST_BODY_TIMEOUT_MS,
      bodies,
      failures: webhookFailures,
      onOutcome: (topic, outcome) => {
        ctx.metrics.webhook(topic, outcome);
        hooks.onOutcome?.(topic, outcome);
      },
    }),
  );
  app.route(
    "/",
    providerWebhookRoutes({
      ingest: ctx.providerWebhooks,
      logger: ctx.logger.child({ component: "provider-webhooks" }),
      maxBytes: ctx.config.env.WEBHOOK_MAX_BYTES,
      bodyTimeoutMs: ctx.config.env.REQUEST_BODY_TIMEOUT_MS,
      bodies,
      onOutcome: (outcome) => {
        ctx.metrics.webhook("provider", outcome);
        hooks.onOutcome?.("provider", outcome);
      },
    }),
  );
  return {
    app,
    async close() {
      await Promise.all(closers.map((close) => close()));
    },
  };
}
