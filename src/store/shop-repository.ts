import { count, eq, sql } from "drizzle-orm";
import type { Db } from "./database.ts";
import {
  backfills,
  fulfillmentLinks,
  intents,
  lineItemLinks,
  orderFailures,
  orderLinks,
  retiredOrderLinks,
  shops,
  skippedTestOrders,
  syncCheckpoints,
} from "./schema.ts";

export type ShopStatus = "active" | "paused" | "uninstalled";

export interface ShopRecord {
  shop: string;
  status: ShopStatus;
  pausedReason: string | null;
  storeId: number | null;
  providerEnvironment: "production" | "staging" | "sandbox";
  providerBaseUrl: string | null;
  providerAuthUrl: string | null;
  providerAudience: string | null;
  providerClientId: string | null;
  /** Sealed with the secret box; open only where the secret is used. */
  providerClientSecretSealed: string | null;
  shopTimezone: string | null;
  subscriptionsError: string | null;
  sendTestOrders: boolean;
  accessTokenSealed: string | null;
  accessTokenExpiresAt: string | null;
  accessTokenRefreshAt: string | null;
  refreshTokenSealed: string | null;
  refreshTokenExpiresAt: string | null;
  scopes: string | null;
  storeCurrency: string | null;
  shopCurrency: string | null;
  protectionVariantIds: string[];
  locationMap: Record<string, number>;
  defaultLocationId: number | null;
  installedAt: string | null;
  uninstalledAt: string | null;
  subscriptionsCheckedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export type ShopSettingsInput = Partial<Omit<ShopRecord, "shop" | "createdAt" | "updatedAt">>;

type Row = typeof shops.$inferSelect;

function toRecord(row: Row): ShopRecord {
  return {
    ...row,
    protectionVariantIds: JSON.parse(row.protectionVariantIds) as string[],
    locationMap: JSON.parse(row.locationMap) as Record<string, number>,
  };
}

function toColumns(input: ShopSettingsInput) {
  const { protectionVariantIds, locationMap, ...rest } = input;
  return {
    ...rest,
    ...(protectionVariantIds ? { protectionVariantIds: JSON.stringify(protectionVariantIds) } : {}),
    ...(locationMap ? { locationMap: JSON.stringify(locationMap) } : {}),
  };
}

export class ShopRepository {
  // Prepared once: every sync job reads its shop, and its status again before each call.
  readonly #selectShop;
  readonly #selectStatus;

  constructor(private readonly db: Db) {
    this.#selectShop = db
      .select()
      .from(shops)
      .where(eq(shops.shop, sql.placeholder("shop")))
      .prepare();
    this.#selectStatus = db.$client.prepare("SELECT status FROM shops WHERE shop = ?").pluck();
  }

  /** Whether the database answers (the readiness check). */
  async reachable(): Promise<boolean> {
    try {
      return this.db.$client.prepare("select 1 as ok").get() !== undefined;
    } catch {
      return false;
    }
  }

  async upsertShop(shop: string, input: ShopSettingsInput): Promise<ShopRecord> {
    const now = new Date().toISOString();
    const columns = toColumns(input);
    this.db
      .insert(shops)
      .values({ shop, ...columns, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: shops.shop, set: { ...columns, updatedAt: now } })
      .run();
    return (await this.getShop(shop)) as ShopRecord;
  }

  async getShop(shop: string): Promise<ShopRecord | null> {
    const row = this.#selectShop.get({ shop });
    return row ? toRecord(row) : null;
  }

  /** Only the status (the sync loop's check before each provider call), null for an unknown shop. */
  async statusOf(shop: string): Promise<ShopStatus | null> {
    return (this.#selectStatus.get(shop) as ShopStatus | undefined) ?? null;
  }

  /** Records that a test order was not sent (once per order). */
  async markTestOrderSkipped(shop: string, sourceOrderId: string): Promise<void> {
    this.db
      .insert(skippedTestOrders)
      .values({ shop, sourceOrderId, skippedAt: new Date().toISOString() })
      .onConflictDoNothing()
      .run();
  }

  /** How many test orders were not sent. */
  async countSkippedTestOrders(shop: string): Promise<number> {
    return (
      this.db
        .select({ n: count() })
        .from(skippedTestOrders)
        .where(eq(skippedTestOrders.shop, shop))
        .get()?.n ?? 0
    );
  }

  async listShops(filter: { status?: ShopStatus } = {}): Promise<ShopRecord[]> {
    const query = this.db.select().from(shops);
    const rows = filter.status ? query.where(eq(shops.status, filter.status)).all() : query.all();
    return rows.map(toRecord);
  }

  async setStatus(shop: string, status: ShopStatus, reason: string | null = null): Promise<void> {
    const now = new Date().toISOString();
    this.db
      .update(shops)
      .set({
        status,
        pausedReason: status === "paused" ? reason : null,
        ...(status === "uninstalled"
          ? { uninstalledAt: now, accessTokenSealed: null, refreshTokenSealed: null }
          : {}),
        updatedAt: now,
      })
      .where(eq(shops.shop, shop))
      .run();
  }

  async updateSettings(shop: string, input: ShopSettingsInput): Promise<ShopRecord | null> {
    this.db
      .update(shops)
      .set({ ...toColumns(input), updatedAt: new Date().toISOString() })
      .where(eq(shops.shop, shop))
      .run();
    return await this.getShop(shop);
  }

  /** shop/redact: everything of the shop goes (privacy requests stay, as the record of it). */
  async deleteShopData(shop: string): Promise<void> {
    this.db.transaction((tx) => {
      for (const table of [
        lineItemLinks,
        fulfillmentLinks,
        intents,
        orderLinks,
        retiredOrderLinks,
        orderFailures,
        skippedTestOrders,
      ]) {
        tx.delete(table).where(eq(table.shop, shop)).run();
      }
      tx.delete(backfills).where(eq(backfills.shop, shop)).run();
      tx.delete(syncCheckpoints).where(eq(syncCheckpoints.shop, shop)).run();
      tx.delete(shops).where(eq(shops.shop, shop)).run();
    });
  }
}
