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

/** A refresh token lives 90 days (`refresh_token_expires_in`). */
export const REFRESH_TOKEN_TTL_MS = 90 * 86_400_000;
/**
 * From this moment Shopify rejects Admin API calls made with non-expiring offline tokens (and
 * no longer migrates one never migrated). The stand-in applies it when asked
 * (`nonExpiringRefusedFrom`), so that tests and demos on non-expiring tokens keep working.
 */
export const NON_EXPIRING_REFUSED_FROM = Date.parse("2027-01-01T00:00:00Z");
/** A lost migration answer is recovered by retrying with the original token for 7 days. */
export const MIGRATION_RECOVERY_MS = 7 * 86_400_000;

/** The moment the stand-in lives in (epoch ms); tests move it to try expiries and deadlines. */
export type StandInClock = () => number;

/** When the stand-in's tokens end: its clock, and Shopify's end of non-expiring tokens. */
export interface StandInTokenPolicy {
  now: StandInClock;
  /** Epoch ms (NON_EXPIRING_REFUSED_FROM for Shopify's); null: non-expiring tokens never end. */
  nonExpiringRefusedFrom: number | null;
}

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
   * The refresh tokens Shopify accepts, each with the moment it expires (90 days after it was
   * issued): the newest, and the one used to get it until the newest is used in turn (a lost
   * refresh answer can then be retried with the old one).
   */
  refreshTokens = new Map<string, number>();
  /**
   * The non-expiring token's migration (token exchange with `expiring: '1'`): the pair it gave
   * and when. A retry with the original token within 7 days answers the same pair, until that
   * pair is refreshed or replaced. The original token no longer works for the Admin API.
   */
  migrated: { at: number; access: string; refresh: string; recoverable: boolean } | null = null;
  /** Refresh and migration answers to compute and then lose with a 502 (the rotation happens). */
  dropRefreshAnswers = 0;
  /** Refresh and migration answers to compute and then lose by resetting the connection. */
  resetRefreshAnswers = 0;
  /**
   * Refresh answers to compute and then hold until `releaseRefreshAnswers()` (a slow Shopify:
   * the rotation has happened, the answer is still on its way).
   */
  holdRefreshAnswers = 0;
  readonly #held: (() => void)[] = [];

  /** Waits, when asked to, before a refresh answer leaves. */
  async heldAnswer(): Promise<void> {
    if (this.holdRefreshAnswers <= 0) return;
    this.holdRefreshAnswers--;
    await new Promise<void>((resolve) => this.#held.push(resolve));
  }

  /** Lets every held refresh answer go. */
  releaseRefreshAnswers(): void {
    for (const release of this.#held.splice(0)) release();
  }
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
    /** The stand-in's clock and deadline (token lives, refresh-token expiry, 2027). */
    readonly policy: StandInTokenPolicy = { now: Date.now, nonExpiringRefusedFrom: null },
  ) {
    this.accessToken = options.accessToken ?? `shpat_${randomBytes(16).toString("hex")}`;
    this.scopes = options.scopes ?? ["read_orders", "read_all_orders", "read_fulfillments"];
    this.bucket = new CostBucket(options.maximumAvailable ?? 2_000, options.restoreRate ?? 100);
    this.catalog = { ...defaultCatalog(domain), ...options.catalog };
  }

  /** The stand-in's moment (epoch ms). */
  now(): number {
    return this.policy.now();
  }

  /** Whether Shopify no longer takes non-expiring tokens at this moment. */
  #pastNonExpiring(now: number): boolean {
    const from = this.policy.nonExpiringRefusedFrom;
    return from !== null && now >= from;
  }

  /**
   * Whether an Admin API call with this token is accepted now. The non-expiring token works
   * until it is migrated, and not at all past the deadline (2027-01-01) when one is set.
   */
  acceptsToken(token: string, now = this.now()): boolean {
    if (token === "" || this.uninstalled) return false;
    if (token === this.accessToken) return this.migrated === null && !this.#pastNonExpiring(now);
    const expiresAt = this.expiringTokens.get(token);
    return expiresAt !== undefined && expiresAt > now;
  }

  /** Whether this refresh token is accepted now (known, and not past its 90 days). */
  acceptsRefreshToken(token: string, now = this.now()): boolean {
    const expiresAt = this.refreshTokens.get(token);
    return expiresAt !== undefined && expiresAt > now;
  }

  /**
   * A new expiring access token and refresh token; `used` (a refresh token) stays valid until
   * the new one is used. Any other acquisition ends a migration's recovery.
   */
  issueExpiring(ttlSeconds: number, used?: string): { access: string; refresh: string } {
    const access = `shpat_exp_${randomBytes(12).toString("hex")}`;
    const refresh = `shprt_${randomBytes(12).toString("hex")}`;
    const now = this.now();
    this.expiringTokens.set(access, now + ttlSeconds * 1000);
    const kept = used !== undefined ? this.refreshTokens.get(used) : undefined;
    this.refreshTokens = new Map(kept !== undefined && used ? [[used, kept]] : []);
    this.refreshTokens.set(refresh, now + REFRESH_TOKEN_TTL_MS);
    if (this.migrated) this.migrated.recoverable = false;
    return { access, refresh };
  }

  /**
   * Exchanges the non-expiring token for an expiring pair; null when Shopify refuses: a token
   * never migrated after the 2027 deadline, or a retry past its 7 days or after the pair it
   * gave was refreshed or replaced. A retry in time answers the same pair, its access token's
   * life extended.
   */
  migrate(subject: string, ttlSeconds: number): { access: string; refresh: string } | null {
    if (subject === "" || subject !== this.accessToken || this.uninstalled) return null;
    const now = this.now();
    if (this.migrated) {
      const { at, access, refresh, recoverable } = this.migrated;
      if (!recoverable || now - at > MIGRATION_RECOVERY_MS) return null;
      this.expiringTokens.set(access, now + ttlSeconds * 1000);
      return { access, refresh };
    }
    if (this.#pastNonExpiring(now)) return null;
    const issued = this.issueExpiring(ttlSeconds);
    this.migrated = { at: now, ...issued, recoverable: true };
    return issued;
  }

  /** Installs the app again after an uninstall: a new token; the old ones stay refused. */
  reinstall(): void {
    if (!this.uninstalled) return;
    this.uninstalled = false;
    this.accessToken = `shpat_${randomBytes(16).toString("hex")}`;
    this.expiringTokens.clear();
    this.refreshTokens.clear();
    this.migrated = null;
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

  constructor(
    /** The stand-in's clock and deadline; a test moves the clock (90 days on) without waiting. */
    readonly policy: StandInTokenPolicy = { now: Date.now, nonExpiringRefusedFrom: null },
  ) {}

  installShop(domain: string, options: ShopInstallOptions = {}): StandInShop {
    const shop = new StandInShop(domain, options, this.policy);
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
