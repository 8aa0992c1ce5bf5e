import { and, count, eq, getTableColumns, ne } from "drizzle-orm";
import { type Db, reachable, writeTogether } from "./database.ts";
import type { shops } from "./schema.ts";

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
  // Prepared once, as every sync job reads its shop, and its status again before each call.
  readonly #selectShop;
  readonly #selectStatus;

  constructor(private readonly db: Db) {
    // The row as drizzle's select gives it, without its row mapping (a share of a sync job's
    // CPU): each column under its property name.
    const columns = Object.entries(getTableColumns(db.t.shops));
    const selectShop = `SELECT ${columns.map(([key, c]) => `"${c.name}" AS "${key}"`).join(", ")} FROM shops WHERE shop = `;
    const selectStatus = "SELECT status FROM shops WHERE shop = ";
    if (db.dialect === "sqlite") {
      // Its boolean columns turned to booleans (null stays null, as drizzle leaves it).
      const select = db.sqlite.$client.prepare(`${selectShop}?`);
      const booleans = columns
        .filter(([, c]) => c.columnType === "SQLiteBoolean")
        .map(([key]) => key);
      const status = db.sqlite.$client.prepare(`${selectStatus}?`).pluck();
      this.#selectShop = async (shop: string) => {
        const row = select.get(shop) as Record<string, unknown> | undefined;
        if (row) for (const key of booleans) if (row[key] !== null) row[key] = Boolean(row[key]);
        return row as Row | undefined;
      };
      this.#selectStatus = async (shop: string) => status.get(shop) as ShopStatus | undefined;
    } else {
      // Named prepared statements (each pooled connection plans them once), sent with the other
      // reads of the same event-loop turn on one connection (database.ts, `turnBatched`). BIGINT
      // is a number and BOOLEAN a boolean as the pool parses them.
      const shopQuery = { name: "shops_get", text: `${selectShop}$1` };
      const statusQuery = { name: "shops_status", text: `${selectStatus}$1` };
      this.#selectShop = async (shop: string) =>
        (await db.turn.query({ ...shopQuery, values: [shop] })).rows[0] as Row | undefined;
      this.#selectStatus = async (shop: string) =>
        (await db.turn.query({ ...statusQuery, values: [shop] })).rows[0]?.status as
          | ShopStatus
          | undefined;
    }
  }

  /** Whether the database answers (the readiness check). */
  async reachable(): Promise<boolean> {
    return reachable(this.db);
  }

  async upsertShop(shop: string, input: ShopSettingsInput): Promise<ShopRecord> {
    const { shops } = this.db.t;
    const now = new Date().toISOString();
    const columns = toColumns(input);
    await this.db.orm
      .insert(shops)
      .values({ shop, ...columns, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: shops.shop, set: { ...columns, updatedAt: now } });
    return (await this.getShop(shop)) as ShopRecord;
  }

  async getShop(shop: string): Promise<ShopRecord | null> {
    const row = await this.#selectShop(shop);
    return row ? toRecord(row) : null;
  }

  /** Only the status (the sync loop's check before each provider call), null for an unknown shop. */
  async statusOf(shop: string): Promise<ShopStatus | null> {
    return (await this.#selectStatus(shop)) ?? null;
  }

  /** Records that a test order was not sent (once per order). */
  async markTestOrderSkipped(shop: string, sourceOrderId: string): Promise<void> {
    const { skippedTestOrders } = this.db.t;
    await this.db.orm
      .insert(skippedTestOrders)
      .values({ shop, sourceOrderId, skippedAt: new Date().toISOString() })
      .onConflictDoNothing();
  }

  /** When the test order was first kept out of the provider, or null if it never was. */
  async testOrderSkippedAt(shop: string, sourceOrderId: string): Promise<string | null> {
    const { skippedTestOrders } = this.db.t;
    const [row] = await this.db.orm
      .select({ at: skippedTestOrders.skippedAt })
      .from(skippedTestOrders)
      .where(
        and(eq(skippedTestOrders.shop, shop), eq(skippedTestOrders.sourceOrderId, sourceOrderId)),
      );
    return row?.at ?? null;
  }

  /** How many test orders were not sent. */
  async countSkippedTestOrders(shop: string): Promise<number> {
    const { skippedTestOrders } = this.db.t;
    const [row] = await this.db.orm
      .select({ n: count() })
      .from(skippedTestOrders)
      .where(eq(skippedTestOrders.shop, shop));
    return row?.n ?? 0;
  }

  async listShops(filter: { status?: ShopStatus } = {}): Promise<ShopRecord[]> {
    const { shops } = this.db.t;
    const rows = await this.db.orm
      .select()
      .from(shops)
      .where(filter.status ? eq(shops.status, filter.status) : undefined);
    return rows.map(toRecord);
  }

  /** The installed (not uninstalled) shops whose provider credentials use this client ID. */
  async listShopsOfProviderClient(clientId: string): Promise<ShopRecord[]> {
    const { shops } = this.db.t;
    const rows = await this.db.orm
      .select()
      .from(shops)
      .where(and(eq(shops.providerClientId, clientId), ne(shops.status, "uninstalled")));
    return rows.map(toRecord);
  }

  async setStatus(shop: string, status: ShopStatus, reason: string | null = null): Promise<void> {
    const { shops } = this.db.t;
    const now = new Date().toISOString();
    await this.db.orm
      .update(shops)
      .set({
        status,
        pausedReason: status === "paused" ? reason : null,
        ...(status === "uninstalled"
          ? { uninstalledAt: now, accessTokenSealed: null, refreshTokenSealed: null }
          : {}),
        updatedAt: now,
      })
      .where(eq(shops.shop, shop));
  }

  async updateSettings(shop: string, input: ShopSettingsInput): Promise<ShopRecord | null> {
    const { shops } = this.db.t;
    await this.db.orm
      .update(shops)
      .set({ ...toColumns(input), updatedAt: new Date().toISOString() })
      .where(eq(shops.shop, shop));
    return this.getShop(shop);
  }

  /**
   * shop/redact: everything of the shop goes (privacy requests stay, as the record of it), its
   * claims included. Provider events belong to the provider store, not to one shop.
   */
  async deleteShopData(shop: string): Promise<void> {
    const t = this.db.t;
    await writeTogether(this.db, (tx) => [
      ...[
        t.lineItemLinks,
        t.fulfillmentLinks,
        t.intents,
        t.orderLinks,
        t.retiredOrderLinks,
        t.orderFailures,
        t.skippedTestOrders,
        t.providerClaims,
        t.claimSettings,
      ].map((table) => tx.delete(table).where(eq(table.shop, shop))),
      tx.delete(t.backfills).where(eq(t.backfills.shop, shop)),
      tx.delete(t.syncCheckpoints).where(eq(t.syncCheckpoints.shop, shop)),
      tx.delete(t.shops).where(eq(t.shops.shop, shop)),
    ]);
  }
}
