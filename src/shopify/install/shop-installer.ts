import type { Session } from "@shopify/shopify-api";
import type { Logger } from "pino";
import { errorText } from "../../lib/redact.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import type { ShopRecord, ShopRepository } from "../../store/index.ts";
import { SUBSCRIBED_TOPICS } from "../topics.ts";
import type { SealedSessionStorage } from "./session-storage.ts";
import { tokenColumns } from "./shop-tokens.ts";
import {
  type AdminGraphql,
  ensureWebhookSubscriptions,
  type SubscriptionCheck,
} from "./webhook-subscriptions.ts";

/** Why a freshly installed shop does not sync yet. */
export const AWAITING_SETTINGS = "waiting for the provider settings (client ID, secret, store)";

const SHOP_CURRENCY = `#graphql
  query ConnectorShopCurrency { shop { currencyCode } }`;

export interface ShopInstallerDeps {
  /** The shop's Admin GraphQL client (its stored offline token). */
  adminFor(shop: ShopRecord): AdminGraphql;
  shops: ShopRepository;
  sessions: SealedSessionStorage;
  secrets: SecretBox;
  /** `APP_URL/webhooks/shopify`. */
  callbackUrl: string;
  /**
   * `app`: shopify.app.toml's subscriptions deliver every topic; the connector only removes
   * per-shop duplicates of them. `per-shop`: the connector registers each topic for each shop.
   */
  webhookRegistration?: "app" | "per-shop";
  logger: Logger;
  /**
   * Resyncs the orders of a shop changed since a moment (a subscription was missing, so
   * webhooks may have been lost). Wired to the resync of src/shopify when it is available.
   */
  resyncSince?(shop: string, since: Date): Promise<void>;
  /** Tests pass a fixed clock. */
  now?: () => Date;
}

export interface SubscriptionReport extends SubscriptionCheck {
  shop: string;
  /** Set when subscriptions were missing: the start of the window queued for resync. */
  resyncedSince: string | null;
}

/**
 * What happens to a shop at install and afterwards on the Shopify side: the offline session
 * stored (sealed), the shop row created or revived, the shop's currency read, and every webhook
 * subscription the connector needs kept in place.
 */
export class ShopInstaller {
  readonly #d: ShopInstallerDeps;

  constructor(deps: ShopInstallerDeps) {
    this.#d = deps;
  }

  #now() {
    return this.#d.now?.() ?? new Date();
  }

  /** The OAuth callback's last step. A reinstall keeps the shop's settings and links. */
  async install(session: Session): Promise<ShopRecord> {
    const { shops, secrets, logger } = this.#d;
    if (!session.accessToken) throw new Error("the OAuth session carries no access token");
    const shop = session.shop;
    const log = logger.child({ shop });
    await this.#d.sessions.storeSession(session);
    const known = await shops.getShop(shop);
    const configured = Boolean(
      known?.storeId && known.providerClientId && known.providerClientSecretSealed,
    );
    const record = await shops.upsertShop(shop, {
      // The token, and for an expiring one its refresh token and times (all sealed or plain).
      ...tokenColumns(session, secrets),
      scopes: session.scope ?? null,
      installedAt: this.#now().toISOString(),
      uninstalledAt: null,
      status: configured ? "active" : "paused",
      pausedReason: configured ? null : AWAITING_SETTINGS,
    });
    const graphql = this.#d.adminFor(record);
    try {
      const { data } = await graphql.request<{ shop: { currencyCode: string } }>(SHOP_CURRENCY);
      await shops.updateSettings(shop, { shopCurrency: data.shop.currencyCode });
    } catch (error) {
      log.warn({ err: { message: errorText(error) } }, "could not read the shop currency");
    }
    try {
      const check = await ensureWebhookSubscriptions(graphql, {
        callbackUrl: this.#d.callbackUrl,
        topics: SUBSCRIBED_TOPICS,
        mode: this.#d.webhookRegistration ?? "per-shop",
      });
      await shops.updateSettings(shop, {
        subscriptionsCheckedAt: this.#now().toISOString(),
        subscriptionsError: null,
      });
      log.info({ created: check.created.length }, "webhook subscriptions in place");
    } catch (error) {
      // The install stands: start-up and the sweep re-create what is missing. Meanwhile the
      // settings page, `status` and /metrics show it.
      await shops.updateSettings(shop, {
        subscriptionsError: (error as Error).message.slice(0, 300),
      });
      log.error(
        { err: { message: errorText(error) } },
        "could not create the webhook subscriptions; the next check retries",
      );
    }
    return (await shops.getShop(shop)) as ShopRecord;
  }

  /**
   * Checks one shop's subscriptions and re-creates the missing ones. When any was missing, the
   * orders changed since the last successful check (or since install) are resynced: webhooks of
   * that window may never have been sent.
   */
  async checkSubscriptions(shop: string): Promise<SubscriptionReport | null> {
    const record = await this.#d.shops.getShop(shop);
    if (!record || record.status === "uninstalled") return null;
    if (!record.accessTokenSealed) return null;
    const graphql = this.#d.adminFor(record);
    const checkedAt = this.#now();
    let check: Awaited<ReturnType<typeof ensureWebhookSubscriptions>>;
    try {
      check = await ensureWebhookSubscriptions(graphql, {
        callbackUrl: this.#d.callbackUrl,
        topics: SUBSCRIBED_TOPICS,
        mode: this.#d.webhookRegistration ?? "per-shop",
      });
    } catch (error) {
      await this.#d.shops.updateSettings(shop, {
        subscriptionsError: (error as Error).message.slice(0, 300),
      });
      throw error;
    }
    let resyncedSince: string | null = null;
    if (check.created.length > 0) {
      const since = record.subscriptionsCheckedAt ?? record.installedAt ?? record.createdAt;
      resyncedSince = since;
      this.#d.logger.warn(
        { shop, created: check.created, since },
        "webhook subscriptions were missing; re-created, resyncing the gap",
      );
      if (this.#d.resyncSince) await this.#d.resyncSince(shop, new Date(since));
    }
    await this.#d.shops.updateSettings(shop, {
      subscriptionsCheckedAt: checkedAt.toISOString(),
      subscriptionsError: null,
    });
    return { shop, ...check, resyncedSince };
  }

  /** Start-up check over every installed shop; one shop's failure does not stop the others. */
  async checkAllSubscriptions(): Promise<SubscriptionReport[]> {
    const reports: SubscriptionReport[] = [];
    for (const shop of await this.#d.shops.listShops()) {
      if (shop.status === "uninstalled" || !shop.accessTokenSealed) continue;
      try {
        const report = await this.checkSubscriptions(shop.shop);
        if (report) reports.push(report);
      } catch (error) {
        this.#d.logger.error(
          { shop: shop.shop, err: { message: errorText(error) } },
          "webhook subscription check failed",
        );
      }
    }
    return reports;
  }
}
