import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SandboxHandle, type SandboxOptions, startSandbox } from "@connector/provider-sandbox";
import {
  appSubscriptionsFromToml,
  type ShopifyStandInHandle,
  startShopifyStandIn,
} from "@connector/shopify-standin";
import { type ServerType, serve } from "@hono/node-server";
import type { pino } from "pino";
import { type Connector, createConnector } from "../../src/app/connector.ts";
import { composeWebApp } from "../../src/app/web.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { type BackfillWorkerHandle, startBackfillWorker } from "../../src/jobs/backfill-worker.ts";
import {
  type ProviderEventWorkerHandle,
  startProviderEventWorker,
} from "../../src/jobs/provider-event-worker.ts";
import { startSyncWorker } from "../../src/jobs/sync-worker.ts";
import { freePort } from "../../src/lib/free-port.ts";
import { LINGERING_CLOSE } from "../../src/lib/lingering-close.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import type { WebApp } from "../../src/server/app.ts";
import { ShopifyTokenError } from "../../src/shopify/admin-client.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { type MaintenanceWorker, maintenanceWorker } from "./maintenance-worker.ts";
import { service } from "./services.ts";
import { sourceOrder } from "./source-order-factory.ts";

export const APP_KEY = "install-test-api-key";
const APP_TOML = new URL("../../shopify.app.toml", import.meta.url).pathname;
export const APP_SECRET = "install-test-api-secret";
/** The Shopify library answers 410 to bots (it checks the User-Agent): requests come as a browser. */
export const BROWSER_UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36";

/** A cookie jar just big enough for one browser-less install: name=value pairs by name. */
export class CookieJar {
  readonly #cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair?.indexOf("=") ?? -1;
      if (!pair || eq < 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === "" || /expires=Thu, 01 Jan 1970/i.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
  has(name: string): boolean {
    return this.#cookies.has(name);
  }
}

export interface InstallHarness {
  ctx: Connector;
  web: WebApp;
  /** http://127.0.0.1:port: APP_URL, where the connector listens. */
  appUrl: string;
  standIn: ShopifyStandInHandle;
  provider: SandboxHandle;
  /** The staging sandbox, when started (options.staging). */
  staging: SandboxHandle | undefined;
  dbPath: string;
  /** GET on the connector with the jar's cookies, redirects not followed. */
  get(path: string, jar?: CookieJar, headers?: Record<string, string>): Promise<Response>;
  /** A settings form posted as the browser would (same origin, the jar's cookies), not followed. */
  postForm(path: string, body: Record<string, string>, jar: CookieJar): Promise<Response>;
  /** Follows Shopify's redirect to the stand-in's authorize page, as a browser would. */
  authorize(location: string): Promise<Response>;
  /**
   * Starts the worker role's maintenance worker (sweeps, bulk retries, what waited for a shop's
   * token once it reconnects); the harness closes it unless the test did.
   */
  maintenanceWorker(): Promise<MaintenanceWorker>;
  /** install → authorize → callback; returns the callback's response and the jar. */
  install(shop: string): Promise<{ callback: Response; jar: CookieJar }>;
  /**
   * The merchant's two first settings, as the page posts them: the provider credentials
   * (production) and the provider store. Throws unless both are saved.
   */
  connect(
    jar: CookieJar,
    credentials: { clientId: string; clientSecret: string },
    storeId: number,
  ): Promise<void>;
  close(): Promise<void>;
}

/**
 * The connector's web process over real HTTP with a real Redis and SQLite file, the stand-in
 * Shopify (OAuth, Admin GraphQL; SHOPIFY_ADMIN_URL) and the provider sandbox.
 */
export async function startInstallHarness(
  options: {
    provider?: SandboxOptions;
    env?: Record<string, string>;
    /** Starts the sync and backfill workers too (backfill and resync tests). */
    workers?: boolean;
    /** Where the connector's log lines go (stdout when unset). */
    logDestination?: pino.DestinationStream;
    /** A second sandbox as the provider's staging environment (settings page: "Staging"). */
    staging?: SandboxOptions;
    /** The stand-in Shopify's expiring offline token life (`expires_in`, default 3600). */
    shopifyTokenTtlSeconds?: number;
    /** The stand-in Shopify's clock (token expiry, the 2027 deadline); Date.now when unset. */
    shopifyNow?: () => number;
    /** The stand-in refuses non-expiring tokens from then (NON_EXPIRING_REFUSED_FROM). */
    shopifyNonExpiringRefusedFrom?: number;
    /**
     * The stand-in delivers shopify.app.toml's app-specific subscriptions (as after `shopify app
     * deploy`) and the connector runs with SHOPIFY_WEBHOOKS=app.
     */
    appWebhooks?: boolean;
  } = {},
): Promise<InstallHarness> {
  const staging = options.staging
    ? await startSandbox({ stores: [1001, 1002], rateLimit: 100_000, ...options.staging })
    : undefined;
  const provider = await startSandbox({
    stores: [1001, 1002],
    rateLimit: 100_000,
    ...options.provider,
  });
  const port = await freePort();
  const appUrl = `http://127.0.0.1:${port}`;
  const standIn = await startShopifyStandIn({
    apiSecret: APP_SECRET,
    apiKey: APP_KEY,
    // The stand-in admin (/store/{handle}/apps/order-sync) frames the connector.
    appUrl,
    ...(options.appWebhooks
      ? { appSubscriptions: appSubscriptionsFromToml(APP_TOML, appUrl) }
      : {}),
    ...(options.shopifyTokenTtlSeconds ? { tokenTtlSeconds: options.shopifyTokenTtlSeconds } : {}),
    ...(options.shopifyNow ? { now: options.shopifyNow } : {}),
    ...(options.shopifyNonExpiringRefusedFrom
      ? { nonExpiringRefusedFrom: options.shopifyNonExpiringRefusedFrom }
      : {}),
  });
  const dir = mkdtempSync(join(tmpdir(), "connector-install-"));
  const dbPath = join(dir, "connector.sqlite");
  const env = parseEnv({
    DATABASE_PATH: dbPath,
    APP_URL: appUrl,
    SHOPIFY_API_KEY: APP_KEY,
    SHOPIFY_API_SECRET: APP_SECRET,
    // Every call the Shopify library makes to https://{shop}/admin goes to the stand-in.
    SHOPIFY_ADMIN_URL: standIn.url,
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64"),
    LOG_LEVEL: "silent",
    ...(options.appWebhooks ? { SHOPIFY_WEBHOOKS: "app" } : {}),
    ...options.env,
  });
  const ctx = createConnector({
    config: resolveRuntimeConfig(env),
    logger: createLogger(env.LOG_LEVEL, options.logDestination),
    redis: service("redisUrl"),
    prefix: `t-${randomUUID()}`,
    providerDefaults: {
      baseUrl: provider.url,
      authUrl: provider.authUrl,
      audience: provider.audience,
    },
    ...(staging
      ? {
          providerStaging: {
            baseUrl: staging.url,
            authUrl: staging.authUrl,
            audience: staging.audience,
          },
        }
      : {}),
  });
  await ctx.ready();

  const web = composeWebApp(ctx);
  const server: ServerType = await new Promise((resolve, reject) => {
    // As the web role serves it (src/lib/listen.ts).
    const s = serve(
      { fetch: web.app.fetch, hostname: "127.0.0.1", port, serverOptions: LINGERING_CLOSE },
      () => resolve(s),
    );
    s.once("error", reject);
  });

  const syncWorker = options.workers ? startSyncWorker(ctx, { concurrency: 4 }) : null;
  const backfillWorker: BackfillWorkerHandle | null = options.workers
    ? startBackfillWorker(ctx)
    : null;

  const maintenance: (() => Promise<void>)[] = [];

  const get = (path: string, jar?: CookieJar, headers: Record<string, string> = {}) =>
    fetch(new URL(path, appUrl), {
      redirect: "manual",
      headers: { "user-agent": BROWSER_UA, ...(jar ? { cookie: jar.header() } : {}), ...headers },
    });
  const postForm = (path: string, body: Record<string, string>, jar: CookieJar) =>
    fetch(new URL(path, appUrl), {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: appUrl,
        cookie: jar.header(),
        "user-agent": BROWSER_UA,
      },
      body: new URLSearchParams(body),
    });
  const authorize = (location: string) => {
    const url = new URL(location);
    return fetch(`${standIn.url}${url.pathname}${url.search}`, {
      redirect: "manual",
      headers: { "x-forwarded-host": url.hostname },
    });
  };

  return {
    ctx,
    web,
    appUrl,
    standIn,
    provider,
    staging,
    dbPath,
    get,
    postForm,
    authorize,
    maintenanceWorker: () => maintenanceWorker(ctx, (close) => maintenance.push(close)),
    async install(shop) {
      const jar = new CookieJar();
      const begin = await get(`/shopify/install?shop=${shop}`, jar);
      jar.take(begin);
      const approved = await authorize(begin.headers.get("location") ?? "");
      const callback = await get(approved.headers.get("location") ?? "", jar);
      jar.take(callback);
      return { callback, jar };
    },
    async connect(jar, { clientId, clientSecret }, storeId) {
      const steps: [string, Record<string, string>][] = [
        ["/settings/provider", { clientId, clientSecret, environment: "production" }],
        ["/settings/store", { storeId: String(storeId) }],
      ];
      for (const [path, body] of steps) {
        const res = await postForm(path, body, jar);
        const to = res.headers.get("location") ?? "";
        if (res.status !== 303 || !to.includes("saved=")) {
          throw new Error(`${path} was not saved: ${res.status} ${to}`);
        }
      }
    },
    async close() {
      for (const close of maintenance) await close();
      await backfillWorker?.close();
      await syncWorker?.close();
      await new Promise<void>((resolve) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        server.close(() => resolve());
      });
      await web.close();
      await ctx.close();
      await standIn.close();
      await provider.close();
      await staging?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An order of the shop dead-lettered because Shopify refused the shop's token, as the sync
 * worker records it, with the order's snapshot kept (`snapshot: false`: one Shopify no longer
 * has, whose snapshot expired).
 */
export async function tokenRefusedDeadLetter(
  harness: InstallHarness,
  shop: string,
  orderId: string,
  options: { snapshot?: boolean; topic?: string } = {},
): Promise<void> {
  if (options.snapshot !== false) {
    await harness.ctx.snapshots.storeOrder(
      sourceOrder({ shop: shop as ShopDomain, id: orderId as ShopifyOrderId }),
    );
  }
  const now = new Date().toISOString();
  await harness.ctx.queues.addDeadLetter(deadLetterId(shop, orderId), {
    shop,
    orderId,
    topic: options.topic ?? "orders/updated",
    reason: new ShopifyTokenError(shop).message,
    category: "config",
    errorClass: "ShopifyTokenError",
    attempts: 1,
    firstFailedAt: now,
    lastFailedAt: now,
  });
}

/** The worker role's provider event worker, over the harness's connector. */
export function providerEventWorker(
  harness: InstallHarness,
  options: Parameters<typeof startProviderEventWorker>[1] = {},
): Promise<ProviderEventWorkerHandle> {
  const { ctx } = harness;
  return startProviderEventWorker(
    {
      events: ctx.providerEvents,
      claims: ctx.claims,
      shops: ctx.shops,
      shopifyAdmin: ctx.shopifyAdmin,
      logger: ctx.logger,
      redis: ctx.redis,
      prefix: ctx.prefix,
    },
    options,
  );
}
