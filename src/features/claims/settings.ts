import type { Logger } from "pino";
import { hasScope, TAG_SCOPE } from "../../engine/provider-event-processor.ts";
import { errorText } from "../../lib/redact.ts";
import { type SecretBox, sealedFor } from "../../lib/secret-box.ts";
import type {
  ProviderAccount,
  ProviderEventRepository,
  ProviderEventRow,
  ProviderWebhookSecretRepository,
  ShopRecord,
  ShopRepository,
} from "../../store/index.ts";
import type { ClaimRepository, ClaimRow } from "./repository.ts";

/** What the Claims section shows. */
export interface ClaimsView {
  /** Where the provider sends its webhooks (APP_URL/webhooks/provider). */
  webhookUrl: string;
  /** The shop's provider account; null before credentials are saved. */
  account: ProviderAccount | null;
  hasSecret: boolean;
  /**
   * How many other installed shops use the same provider account: its webhook secret is
   * theirs too, and replacing it needs the merchant's confirmation.
   */
  sharedWith: number;
  tagOrders: boolean;
  /** Whether the shop granted write_orders (as last read from Shopify). */
  canTag: boolean;
  claims: ClaimRow[];
  /** Events of unknown topics or shapes about the shop's store, newest first (20 at most). */
  otherEvents: Pick<ProviderEventRow, "eventId" | "topic" | "receivedAt" | "outcome">[];
}

export interface ClaimsSettingsDeps {
  claims: ClaimRepository;
  events: ProviderEventRepository;
  webhookSecrets: ProviderWebhookSecretRepository;
  shops: ShopRepository;
  secrets: SecretBox;
  /** Admin GraphQL for a shop: the scopes Shopify granted the app. */
  shopifyAdmin: {
    for(shop: ShopRecord): {
      request<T>(query: string, variables?: Record<string, unknown>): Promise<{ data: T }>;
    };
  };
  /** The production environment's API base URL: a shop without its own uses it. */
  defaultBaseUrl: string;
  appUrl: string;
  logger: Logger;
  /**
   * Queues the tagging again of the orders whose claims' tags Shopify refused (a job the worker
   * role runs): called when tagging is turned on with the scope granted.
   */
  retag?: (shop: string) => Promise<void>;
}

/** A webhook secret shorter than this is refused (the provider's are long random strings). */
const MIN_SECRET_LENGTH = 16;

const ACCESS_SCOPES = `#graphql
  query ConnectorAccessScopes { currentAppInstallation { accessScopes { handle } } }`;

/**
 * The settings page's Claims section: the provider's webhook secret (per provider account,
 * sealed), the shop's claims and unrecognised events, and whether claim statuses tag the
 * Shopify orders (only with `write_orders` granted).
 */
export class ClaimsSettings {
  constructor(private readonly deps: ClaimsSettingsDeps) {}

  accountOf(shop: ShopRecord): ProviderAccount | null {
    if (!shop.providerClientId) return null;
    return {
      providerBaseUrl: shop.providerBaseUrl ?? this.deps.defaultBaseUrl,
      clientId: shop.providerClientId,
    };
  }

  /** The other installed shops on the shop's provider account (same API and client ID). */
  async #othersOnAccount(shop: ShopRecord, account: ProviderAccount): Promise<number> {
    const shops = await this.deps.shops.listShopsOfProviderClient(account.clientId);
    return shops.filter(
      (other) =>
        other.shop !== shop.shop &&
        (other.providerBaseUrl ?? this.deps.defaultBaseUrl) === account.providerBaseUrl,
    ).length;
  }

  async view(shop: ShopRecord): Promise<ClaimsView> {
    const { deps } = this;
    const account = this.accountOf(shop);
    const [hasSecret, sharedWith, tagOrders, claims, otherEvents] = await Promise.all([
      account ? deps.webhookSecrets.get(account).then((s) => s !== null) : false,
      account ? this.#othersOnAccount(shop, account) : 0,
      deps.claims.tagsOrders(shop.shop),
      deps.claims.listForShop(shop.shop),
      account && shop.storeId !== null
        ? deps.events.recent(
            { providerBaseUrl: account.providerBaseUrl, storeId: shop.storeId },
            { limit: 100 },
          )
        : [],
    ]);
    return {
      webhookUrl: new URL("/webhooks/provider", this.deps.appUrl).toString(),
      account,
      hasSecret,
      sharedWith,
      tagOrders,
      canTag: hasScope(shop, TAG_SCOPE),
      claims,
      // Unknown topics, and known ones whose body held nothing usable ("kept: …").
      otherEvents: otherEvents
        .filter((e) => e.kind === "unknown" || e.outcome?.startsWith("kept:"))
        .slice(0, 20)
        .map((e) => ({
          eventId: e.eventId,
          topic: e.topic,
          receivedAt: e.receivedAt,
          outcome: e.outcome,
        })),
    };
  }

  /**
   * Seals and saves the secret for the shop's provider account (shared by its other shops).
   * Replacing a saved secret that other shops share needs `confirmShared`: without it the save
   * is refused, naming how many shops it would change.
   */
  async saveWebhookSecret(
    shop: ShopRecord,
    secret: string,
    options: { confirmShared?: boolean } = {},
  ): Promise<
    | { ok: true }
    | {
        ok: false;
        message: string;
        /** The form's field that needs the change (`webhookSecret`, `confirmShared`), if one does. */
        field?: "webhookSecret" | "confirmShared";
      }
  > {
    const account = this.accountOf(shop);
    if (!account) {
      return {
        ok: false,
        message:
          "Save your provider credentials first: the webhook secret belongs to that account.",
      };
    }
    if (secret.length < MIN_SECRET_LENGTH || /\s/.test(secret)) {
      return {
        ok: false,
        message: `Enter the webhook signing secret from your provider account: at least ${MIN_SECRET_LENGTH} characters, no spaces.`,
        field: "webhookSecret",
      };
    }
    if (!options.confirmShared && (await this.deps.webhookSecrets.get(account)) !== null) {
      const others = await this.#othersOnAccount(shop, account);
      if (others > 0) {
        return {
          ok: false,
          message: `Nothing was changed: this signing secret belongs to provider account ${account.clientId}, which ${others === 1 ? "1 other shop uses" : `${others} other shops use`} too. Replacing it changes it for ${others === 1 ? "that shop" : "those shops"} as well: tick “Replace it for every shop on this account”, enter the secret again and save.`,
          // The secret is fine: the confirmation is what is missing.
          field: "confirmShared",
        };
      }
    }
    const context = sealedFor.providerWebhookSecret(account.providerBaseUrl, account.clientId);
    await this.deps.webhookSecrets.set(account, this.deps.secrets.seal(secret, context));
    return { ok: true };
  }

  /**
   * Turns tagging on or off. On needs `write_orders`: the scopes Shopify granted are read again
   * first (the merchant may have just granted it), and stored with the shop.
   */
  async setTagging(
    shop: ShopRecord,
    on: boolean,
  ): Promise<{ ok: true } | { ok: false; message: string }> {
    if (on) {
      const granted = await this.#grantedScopes(shop);
      const current = granted ?? shop.scopes ?? "";
      if (granted !== null && granted !== shop.scopes) {
        await this.deps.shops.updateSettings(shop.shop, { scopes: granted });
      }
      if (!hasScope({ scopes: current }, TAG_SCOPE)) {
        return { ok: false, message: GRANT_HELP };
      }
    }
    await this.deps.claims.setTagOrders(shop.shop, on);
    if (on && this.deps.retag) {
      // Queued only: the merchant's page does not wait for the shop's backlog of refused tags.
      await this.deps
        .retag(shop.shop)
        .catch((error: Error) =>
          this.deps.logger.warn(
            { shop: shop.shop, err: { message: errorText(error) } },
            "claims' order tags not queued to be applied again; each claim's next event tries again",
          ),
        );
    }
    return { ok: true };
  }

  /** The scopes Shopify says the app has on the shop (comma-separated), or null if unknown. */
  async #grantedScopes(shop: ShopRecord): Promise<string | null> {
    try {
      const { data } = await this.deps.shopifyAdmin
        .for(shop)
        .request<{ currentAppInstallation: { accessScopes: { handle: string }[] } }>(ACCESS_SCOPES);
      return data.currentAppInstallation.accessScopes.map((s) => s.handle).join(",");
    } catch (error) {
      this.deps.logger.warn(
        { shop: shop.shop, err: { message: errorText(error) } },
        "could not read the app's granted scopes from Shopify",
      );
      return null;
    }
  }
}

/** What the page says when write_orders is missing. */
export const GRANT_HELP = `Tagging orders needs Shopify's ${TAG_SCOPE} permission, which this shop has not granted the app. Open the app from your Shopify admin and choose “Allow order tagging” (Shopify asks you to approve ${TAG_SCOPE}), then turn tagging on here.`;
