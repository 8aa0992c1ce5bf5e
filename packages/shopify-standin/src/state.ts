import { randomBytes } from "node:crypto";
import { defaultCatalog, type StandInCatalog } from "./catalog.ts";
import { CostBucket } from "./cost-bucket.ts";

/** A REST-shaped order as Shopify sends it in webhooks; the stand-in's source of truth. */
export type RestOrder = Record<string, unknown> & { id: number | string; updated_at: string };

export interface WebhookSubscription {
  id: string;
  /** GraphQL enum form, e.g. ORDERS_CREATE. */
  topic: string;
  uri: string;
  createdAt: string;
  updatedAt: string;
}

export interface Delivery {
  topic: string;
  uri: string;
  webhookId: string;
  orderId: string | null;
  status: number | "error";
  at: string;
}

export interface ShopInstallOptions {
  accessToken?: string;
  scopes?: string[];
  /** Points per second (100 standard, 200 advanced, 1,000 Plus, 2,000 enterprise). */
  restoreRate?: number;
  maximumAvailable?: number;
  /** Shop currency, products and locations (a small default catalog otherwise). */
  catalog?: Partial<StandInCatalog>;
}

/** Without read_all_orders, the Admin API returns only the last 60 days of orders. */
export const RECENT_ORDERS_WINDOW_MS = 60 * 24 * 3_600_000;

/** One installed shop: its token, orders, webhook subscriptions and cost bucket. */
export class StandInShop {
  readonly orders = new Map<string, RestOrder>();
  readonly subscriptions: WebhookSubscription[] = [];
  readonly deliveries: Delivery[] = [];
  readonly bucket: CostBucket;
  /** The non-expiring offline token (what installs got before expiring tokens). */
  accessToken: string;
  scopes: string[];
  catalog: StandInCatalog;
  /** Expiring offline tokens handed out, with the moment each stops working (epoch ms). */
  readonly expiringTokens = new Map<string, number>();
  /**
   * The refresh tokens Shopify accepts: the newest, and the one used to get it until the newest
   * is used in turn (a lost refresh answer can then be retried with the old one).
   */
  refreshTokens = new Set<string>();
  /** Refresh answers to compute and then lose (the rotation happens, the answer never arrives). */
  dropRefreshAnswers = 0;
  /** Refresh grants answered (or lost after rotating), and refused. */
  refreshes = 0;
  refusedRefreshes = 0;
  /** Non-expiring tokens exchanged for expiring ones. */
  migrations = 0;
  /** Session tokens (the admin's id tokens) exchanged for offline tokens: managed installs. */
  tokenExchanges = 0;
  /** Session tokens the stand-in admin page handed to the framed app. */
  sessionTokensIssued = 0;
  /** Installed by opening the app in the stand-in admin (Shopify-managed installation). */
  installedThroughAdmin = false;
  /** The merchant declines App Bridge scope requests (`shopify.scopes.request`). */
  declineScopeRequests = false;
  /** The merchant uninstalled the app: every token of the shop is refused (401). */
  uninstalled = false;
  private sequence = 0;
  private readonly createdAt = new Date().toISOString();

  constructor(
    readonly domain: string,
    options: ShopInstallOptions,
  ) {
    this.accessToken = options.accessToken ?? `shpat_${randomBytes(16).toString("hex")}`;
    this.scopes = options.scopes ?? ["read_orders", "read_all_orders", "read_fulfillments"];
    this.bucket = new CostBucket(options.maximumAvailable ?? 2_000, options.restoreRate ?? 100);
    this.catalog = { ...defaultCatalog(domain), ...options.catalog };
  }

  /** Whether an Admin API call with this token is accepted now. */
  acceptsToken(token: string, now = Date.now()): boolean {
    if (token === "" || this.uninstalled) return false;
    if (token === this.accessToken) return true;
    const expiresAt = this.expiringTokens.get(token);
    return expiresAt !== undefined && expiresAt > now;
  }

  /** A new expiring access token and refresh token; `used` (a refresh token) stays valid. */
  issueExpiring(ttlSeconds: number, used?: string): { access: string; refresh: string } {
    const access = `shpat_exp_${randomBytes(12).toString("hex")}`;
    const refresh = `shprt_${randomBytes(12).toString("hex")}`;
    this.expiringTokens.set(access, Date.now() + ttlSeconds * 1000);
    this.refreshTokens = new Set(used ? [used, refresh] : [refresh]);
    return { access, refresh };
  }

  /** Installs the app again after an uninstall: a new token; the old ones stay refused. */
  reinstall(): void {
    if (!this.uninstalled) return;
    this.uninstalled = false;
    this.accessToken = `shpat_${randomBytes(16).toString("hex")}`;
    this.expiringTokens.clear();
    this.refreshTokens.clear();
  }

  /**
   * The shop as the REST Shop resource (what app/uninstalled and shop/update deliver): `id`,
   * `name`, `domain`, `myshopify_domain`, `currency`, `iana_timezone`, timestamps.
   */
  shopResource(): Record<string, unknown> {
    const handle = this.domain.replace(/\.myshopify\.com$/, "");
    return {
      id: 1,
      name: this.catalog.name,
      email: `owner@${handle}.example`,
      domain: this.domain,
      myshopify_domain: this.domain,
      currency: this.catalog.currencyCode,
      iana_timezone: this.catalog.ianaTimezone,
      created_at: this.createdAt,
      updated_at: new Date().toISOString(),
    };
  }

  nextId(): number {
    return ++this.sequence;
  }

  /** Stores the order; says whether it is new. */
  putOrder(order: RestOrder): { created: boolean } {
    const key = String(order.id);
    const created = !this.orders.has(key);
    this.orders.set(key, order);
    return { created };
  }

  /** The orders the app may read: all, or the last 60 days without read_all_orders. */
  readableOrders(now = Date.now()): RestOrder[] {
    const all = [...this.orders.values()];
    if (this.scopes.includes("read_all_orders")) return all;
    return all.filter((o) => Date.parse(String(o.created_at)) >= now - RECENT_ORDERS_WINDOW_MS);
  }
}

/** Everything the stand-in knows; tests inspect it directly. */
export class ShopifyStandInState {
  readonly shops = new Map<string, StandInShop>();
  readonly counters = { graphqlRequests: 0, throttled: 0, unauthorized: 0 };

  installShop(domain: string, options: ShopInstallOptions = {}): StandInShop {
    const shop = new StandInShop(domain, options);
    this.shops.set(domain, shop);
    return shop;
  }

  shop(domain: string): StandInShop | undefined {
    return this.shops.get(domain);
  }

  shopByToken(token: string): StandInShop | undefined {
    for (const shop of this.shops.values()) if (shop.acceptsToken(token)) return shop;
    return undefined;
  }
}
