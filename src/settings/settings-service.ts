import type { Logger } from "pino";
import type { ProviderClients } from "../engine/provider-clients.ts";
import type { RegistrationReader } from "../features/registrations/index.ts";
import { errorText } from "../lib/redact.ts";
import type { RedisConnection } from "../lib/redis-keys.ts";
import type { SecretBox } from "../lib/secret-box.ts";
import { sealedFor } from "../lib/secret-box.ts";
import {
  type VerificationFailure,
  type VerifiedStore,
  verifyProviderCredentials,
} from "../provider/verify-credentials.ts";
import type { OrderQueues } from "../queue/order-queues.ts";
import type { AdminClientFactory } from "../shopify/index.ts";
import { AWAITING_SETTINGS } from "../shopify/install/index.ts";
import type { LinkRepository, ShopRecord, ShopRepository } from "../store/index.ts";
import type { OrderRef } from "../sync/order-ref.ts";
import { readSyncStatus, type StatusView } from "./sync-status.ts";

/** What the page shows of a backfill (the backfill module's progress fits this shape). */
export interface BackfillView {
  status: "running" | "paused" | "completed" | "failed";
  since: string | null;
  done: number;
  total: number | null;
  percent: number | null;
  error: string | null;
  warnings: string[];
  startedAt: string;
  completedAt: string | null;
}

/** The backfill as the settings page drives it (src/backfill provides it). */
export interface SettingsBackfill {
  start(shop: ShopRecord, since: string): Promise<BackfillView>;
  latest(shop: ShopRecord): Promise<BackfillView | null>;
}

/** Resync of one order by its name or ID (src/backfill provides it). */
export interface SettingsResync {
  order(shop: ShopRecord, order: OrderRef): Promise<{ found: number; queued: number }>;
}

/** The last product import of a shop, as the settings page shows it. */
export interface CatalogImportView {
  id: number;
  fileName: string;
  status: "rejected" | "running" | "interrupted" | "completed";
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
  total: number;
  counts: Record<
    "created" | "updated" | "unchanged" | "invalid" | "refused" | "failed" | "waiting",
    number
  >;
  /** Bad rows: where, which field, why. */
  problems: { line: number | null; field: string; message: string }[];
}

/** Products outside Shopify, uploaded as a file (src/features/products provides it). */
export interface SettingsCatalogImports {
  /** Largest file accepted, in bytes. */
  maxBytes: number;
  upload(
    shop: ShopRecord,
    file: { name: string; text: string; skipInvalid: boolean },
  ): Promise<
    | { ok: true; view: CatalogImportView }
    /** `field: "file"` when the file is what needs the change (its type, no products). */
    | { ok: false; message: string; field?: "file" }
  >;
  latest(shop: ShopRecord): Promise<CatalogImportView | null>;
}

export interface CatalogVariant {
  id: string;
  title: string;
  sku: string | null;
  price: string;
}
export interface CatalogProduct {
  id: string;
  title: string;
  variants: CatalogVariant[];
}
export interface CatalogLocation {
  id: string;
  name: string;
}
export type Catalog =
  | { ok: true; products: CatalogProduct[]; locations: CatalogLocation[] }
  | { ok: false; message: string };

/** Sized under Shopify's 1,000-point single-query limit (products × variants dominate). */
const CATALOG = `#graphql
  query ConnectorSettingsCatalog {
    products(first: 30) {
      nodes {
        legacyResourceId
        title
        variants(first: 10) { nodes { legacyResourceId title sku price } }
      }
    }
    locations(first: 30) { nodes { legacyResourceId name } }
  }`;

interface CatalogData {
  products: {
    nodes: {
      legacyResourceId: string;
      title: string;
      variants: {
        nodes: { legacyResourceId: string; title: string; sku: string | null; price: string }[];
      };
    }[];
  };
  locations: { nodes: { legacyResourceId: string; name: string }[] };
}

/** Verified store lists are kept a day: the page shows them without calling the provider. */
const STORES_TTL_SECONDS = 24 * 3600;

export type Environment = "production" | "staging";

/** What the settings page reads and changes. */
export interface SettingsDeps {
  shops: ShopRepository;
  links: LinkRepository;
  queues: OrderQueues;
  providers: Pick<ProviderClients, "for" | "endpoints">;
  shopifyAdmin: AdminClientFactory;
  secrets: SecretBox;
  /** Verified store lists and the token cache. */
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
}

/**
 * Everything the settings page reads and changes, for one shop at a time. The shop always
 * comes from the session cookie (the routes), never from the request.
 */
export class SettingsService {
  readonly #ctx: SettingsDeps;
  readonly backfill: SettingsBackfill | null;
  readonly resync: SettingsResync | null;
  /** The Registrations tab's reads from the provider (src/features/registrations provides them). */
  readonly registrations: RegistrationReader | null;
  readonly catalogImports: SettingsCatalogImports | null;

  constructor(
    ctx: SettingsDeps,
    options: {
      backfill?: SettingsBackfill;
      resync?: SettingsResync;
      registrations?: RegistrationReader;
      catalogImports?: SettingsCatalogImports;
    } = {},
  ) {
    this.#ctx = ctx;
    this.backfill = options.backfill ?? null;
    this.resync = options.resync ?? null;
    this.registrations = options.registrations ?? null;
    this.catalogImports = options.catalogImports ?? null;
  }

  #storesKey(shop: string) {
    return `${this.#ctx.prefix}:settings:stores:${shop}`;
  }

  /** The stores the saved credentials cover, as last verified; null before any verification. */
  async verifiedStores(shop: string): Promise<VerifiedStore[] | null> {
    const json = await this.#ctx.redis.get(this.#storesKey(shop));
    return json ? (JSON.parse(json) as VerifiedStore[]) : null;
  }

  /**
   * Verifies the credentials (token, then each store) and saves them only when they work. A
   * blank secret means "keep the saved one" (the page never shows it back).
   */
  async saveCredentials(
    shop: ShopRecord,
    input: { clientId: string; clientSecret: string; environment: Environment },
  ): Promise<
    | { ok: true; stores: VerifiedStore[]; retired: number }
    | {
        ok: false;
        message: string;
        missingSecret?: true;
        /** Why the provider refused: only "credentials" is about the values typed. */
        reason?: VerificationFailure;
      }
  > {
    const ctx = this.#ctx;
    const secret =
      input.clientSecret !== ""
        ? input.clientSecret
        : shop.providerClientSecretSealed && shop.providerClientId === input.clientId
          ? ctx.secrets.open(
              shop.providerClientSecretSealed,
              sealedFor.providerClientSecret(shop.shop),
            )
          : "";
    if (secret === "")
      return { ok: false, message: "Enter the client secret.", missingSecret: true };
    const endpoints = ctx.providers.endpoints(input.environment);
    const result = await verifyProviderCredentials({
      ...endpoints,
      clientId: input.clientId,
      clientSecret: secret,
      environment: input.environment,
      redis: ctx.redis,
      secrets: ctx.secrets,
      prefix: ctx.prefix,
    });
    if (!result.ok) return { ok: false, message: result.message, reason: result.reason };
    const covered = new Set(result.stores.map((s) => s.storeId));
    const keepStore = shop.storeId !== null && covered.has(shop.storeId);
    await ctx.shops.updateSettings(shop.shop, {
      providerClientId: input.clientId,
      providerClientSecretSealed: ctx.secrets.seal(
        secret,
        sealedFor.providerClientSecret(shop.shop),
      ),
      providerEnvironment: input.environment,
      providerBaseUrl: endpoints.baseUrl,
      providerAuthUrl: endpoints.authUrl,
      providerAudience: endpoints.audience,
      ...(keepStore ? {} : { storeId: null, storeCurrency: null }),
    });
    await ctx.redis.set(
      this.#storesKey(shop.shop),
      JSON.stringify(result.stores),
      "EX",
      STORES_TTL_SECONDS,
    );
    // The same store in another environment is another store: its links are retired too.
    const retired = keepStore ? await this.#retireOtherSpaces(shop.shop) : 0;
    await this.#activateIfReady(shop.shop);
    return { ok: true, stores: result.stores, retired };
  }

  /** Picks the store among those the verified token covers. */
  async chooseStore(
    shop: ShopRecord,
    storeId: number,
  ): Promise<{ ok: boolean; message?: string; retired?: number }> {
    const stores = await this.verifiedStores(shop.shop);
    const store = stores?.find((s) => s.storeId === storeId);
    if (!store || store.problem) {
      return {
        ok: false,
        message:
          "Choose one of the stores listed for your credentials (verify them again if the list is missing).",
      };
    }
    await this.#ctx.shops.updateSettings(shop.shop, { storeId, storeCurrency: store.currencyCode });
    const retired = await this.#retireOtherSpaces(shop.shop);
    await this.#activateIfReady(shop.shop);
    return { ok: true, retired };
  }

  /**
   * After a store or environment switch: the links into the previous store are retired (kept
   * for the record, never written through), so every order goes to the new store the next time
   * it syncs, and nothing more is written to the old one. Returns how many were retired.
   */
  async #retireOtherSpaces(shop: string): Promise<number> {
    const record = await this.#ctx.shops.getShop(shop);
    if (!record || record.storeId === null || !record.providerClientId) return 0;
    const space = {
      storeId: record.storeId,
      providerBaseUrl: this.#ctx.providers.for(record).baseUrl,
    };
    return await this.#ctx.links.retireOutside(
      shop,
      space,
      `the shop switched to store ${space.storeId} at ${space.providerBaseUrl}`,
    );
  }

  /** A shop paused only because its settings were missing starts syncing once they are there. */
  async #activateIfReady(shop: string) {
    const record = await this.#ctx.shops.getShop(shop);
    if (
      record?.status === "paused" &&
      record.pausedReason === AWAITING_SETTINGS &&
      record.storeId !== null &&
      record.providerClientId &&
      record.providerClientSecretSealed
    ) {
      await this.#ctx.shops.setStatus(shop, "active");
    }
  }

  /** The shop's products (with variants) and locations, from the Admin API. */
  async catalog(shop: ShopRecord): Promise<Catalog> {
    if (!shop.accessTokenSealed) {
      return {
        ok: false,
        message: "The app has no access to this shop: install it again from Shopify.",
      };
    }
    try {
      const { data } = await this.#ctx.shopifyAdmin.for(shop).request<CatalogData>(CATALOG);
      return {
        ok: true,
        products: data.products.nodes.map((p) => ({
          id: p.legacyResourceId,
          title: p.title,
          variants: p.variants.nodes.map((v) => ({
            id: v.legacyResourceId,
            title: v.title,
            sku: v.sku,
            price: v.price,
          })),
        })),
        locations: data.locations.nodes.map((l) => ({ id: l.legacyResourceId, name: l.name })),
      };
    } catch (error) {
      this.#ctx.logger.warn(
        { shop: shop.shop, err: { message: errorText(error) } },
        "settings: could not read products and locations",
      );
      return {
        ok: false,
        message:
          "Shopify did not return your products and locations just now. Reload the page to try again.",
      };
    }
  }

  async saveProtectionVariants(shop: ShopRecord, variantIds: string[], catalog: Catalog) {
    const known = new Set(
      catalog.ok ? catalog.products.flatMap((p) => p.variants.map((v) => v.id)) : [],
    );
    const unknown = variantIds.filter((id) => !known.has(id));
    if (unknown.length > 0) {
      return {
        ok: false as const,
        message: "Pick the protection variants from the list of your products.",
      };
    }
    await this.#ctx.shops.updateSettings(shop.shop, { protectionVariantIds: variantIds });
    return { ok: true as const };
  }

  async saveLocations(
    shop: ShopRecord,
    map: Record<string, number>,
    defaultLocationId: number | null,
  ): Promise<void> {
    await this.#ctx.shops.updateSettings(shop.shop, { locationMap: map, defaultLocationId });
  }

  status(shop: ShopRecord): Promise<StatusView> {
    return readSyncStatus(this.#ctx, shop);
  }

  /** Orders dead-lettered because Shopify withholds the customer (the page says so at the top). */
  protectedDataWithheld(shop: ShopRecord): Promise<number> {
    return this.#ctx.links.countFailures(shop.shop, "protected-data");
  }
}
