import { and, count, eq, getTableColumns, isNull, ne, notExists, or, sql } from "drizzle-orm";
import { type Db, reachable, writeTogether } from "./database.ts";
import type { shops } from "./schema.ts";

export type ShopStatus = "active" | "paused" | "uninstalled";

/**
 * Why an order was kept out of the provider: `test`, a test order while the shop's test-order
 * setting is off; `no-address`, sold without an address to ship to and nothing ships (a
 * point-of-sale sale).
 */
export type KeptOutReason = "test" | "no-address";

/** An order kept out of the provider, as recorded. */
export interface KeptOutOrder {
  sourceOrderId: string;
  /** Null on rows written before names were kept. */
  orderName: string | null;
  reason: KeptOutReason;
  /** When it was first kept out. */
  at: string;
}

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

  /**
   * Records that an order was kept out of the provider, and why (once per order: the first
   * time stays; the name, reason and Shopify version follow the latest decision). The version
   * (the order's `updated_at`) lets the reconciliation sweep leave the order alone until
   * Shopify changes it.
   */
  async markKeptOut(
    shop: string,
    sourceOrderId: string,
    orderName: string,
    reason: KeptOutReason,
    shopifyUpdatedAt: string | null = null,
  ): Promise<void> {
    const { skippedTestOrders } = this.db.t;
    await this.db.orm
      .insert(skippedTestOrders)
      .values({
        shop,
        sourceOrderId,
        orderName,
        reason,
        shopifyUpdatedAt,
        skippedAt: new Date().toISOString(),
      })
      .onConflictDoUpdate({
        target: [skippedTestOrders.shop, skippedTestOrders.sourceOrderId],
        set: { orderName, reason, shopifyUpdatedAt },
      });
  }

  /**
   * How an order was last kept out of the provider (its reason and the Shopify version it was
   * kept out at), or null when it never was.
   */
  async keptOutVersion(
    shop: string,
    sourceOrderId: string,
  ): Promise<{ reason: KeptOutReason; shopifyUpdatedAt: string | null } | null> {
    const { skippedTestOrders: t } = this.db.t;
    const [row] = await this.db.orm
      .select({ reason: t.reason, shopifyUpdatedAt: t.shopifyUpdatedAt })
      .from(t)
      .where(and(eq(t.shop, shop), eq(t.sourceOrderId, sourceOrderId)));
    if (!row) return null;
    return {
      reason: row.reason === "no-address" ? "no-address" : "test",
      shopifyUpdatedAt: row.shopifyUpdatedAt,
    };
  }

  /**
   * An order kept out of the provider, by its Shopify ID or its name (#1001), or null if none
   * was. Rows written before names were kept are found by ID only.
   */
  async keptOutOrder(shop: string, idOrName: string): Promise<KeptOutOrder | null> {
    const { skippedTestOrders: t } = this.db.t;
    const name = idOrName.startsWith("#") ? idOrName : `#${idOrName}`;
    const rows = await this.db.orm
      .select({
        sourceOrderId: t.sourceOrderId,
        orderName: t.orderName,
        reason: t.reason,
        at: t.skippedAt,
      })
      .from(t)
      .where(and(eq(t.shop, shop), or(eq(t.sourceOrderId, idOrName), eq(t.orderName, name))));
    // The ID first: digits can be an ID and a name (#1001) at once.
    const row = rows.find((r) => r.sourceOrderId === idOrName) ?? rows[0];
    return row ? { ...row, reason: row.reason === "no-address" ? "no-address" : "test" } : null;
  }

  /** How many kept-out orders were recorded without their name (before names were kept). */
  async countKeptOutWithoutName(shop: string): Promise<number> {
    const { skippedTestOrders: t } = this.db.t;
    const [row] = await this.db.orm
      .select({ n: count() })
      .from(t)
      .where(and(eq(t.shop, shop), isNull(t.orderName)));
    return row?.n ?? 0;
  }

  /**
   * How many orders are kept out of the provider for the reason: one sent since (an address
   * added in Shopify, the test-order setting turned on) no longer counts.
   */
  async countKeptOut(shop: string, reason: KeptOutReason): Promise<number> {
    const { skippedTestOrders: t, orderLinks } = this.db.t;
    const sent = this.db.orm
      .select({ one: sql`1` })
      .from(orderLinks)
      .where(and(eq(orderLinks.shop, t.shop), eq(orderLinks.sourceOrderId, t.sourceOrderId)));
    const [row] = await this.db.orm
      .select({ n: count() })
      .from(t)
      .where(and(eq(t.shop, shop), eq(t.reason, reason), notExists(sent)));
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
   * Writes `to` over one of the shop's sealed secrets only while it still holds `from`: a key
   * rotation's re-seal of a value read earlier. A value written meanwhile (a refreshed Shopify
   * token, credentials the merchant changed) is newer, sealed with the current key already, and
   * stays. Answers whether `to` was written.
   */
  async replaceSealed(
    shop: string,
    field: "providerClientSecretSealed" | "accessTokenSealed" | "refreshTokenSealed",
    from: string,
    to: string,
  ): Promise<boolean> {
    const { shops } = this.db.t;
    const written = await this.db.orm
      .update(shops)
      .set({ [field]: to })
      .where(and(eq(shops.shop, shop), eq(shops[field], from)))
      .returning({ shop: shops.shop });
    return written.length > 0;
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
