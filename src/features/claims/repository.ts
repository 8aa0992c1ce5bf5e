import { and, desc, eq, isNotNull, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../../store/database.ts";
import type { providerClaims } from "../../store/schema.ts";

export type ClaimKind = "claim" | "shipping_claim";

export interface ClaimUpdate {
  shop: string;
  kind: ClaimKind;
  claimId: string;
  externalId: string | null;
  /** Null: the event did not say (the stored status stays). */
  status: string | null;
  orderId: number | null;
  sourceOrderId: string | null;
  orderName: string | null;
  /** The provider's time of this state: an update older than the stored one is ignored. */
  updatedOn: string;
  eventId: string;
}

export type ClaimRow = typeof providerClaims.$inferSelect;

/** Claims and shipping claims per shop, and the shop's claim settings. */
export class ClaimRepository {
  constructor(private readonly db: Db) {}

  /**
   * Stores the claim's new state unless the stored one is newer (events can arrive out of
   * order): one statement, so two workers cannot interleave. Fields the event leaves out keep
   * their stored value. Returns the row as stored when it was written, null when it was older.
   */
  async applyIfNewer(update: ClaimUpdate): Promise<ClaimRow | null> {
    const t = this.db.t.providerClaims;
    const now = new Date().toISOString();
    const keep = (column: string) =>
      sql.raw(`coalesce(excluded.${column}, provider_claims.${column})`);
    const rows = await this.db.orm
      .insert(t)
      .values({
        shop: update.shop,
        kind: update.kind,
        claimId: update.claimId,
        externalId: update.externalId,
        status: update.status,
        orderId: update.orderId,
        sourceOrderId: update.sourceOrderId,
        orderName: update.orderName,
        updatedOn: update.updatedOn,
        lastEventId: update.eventId,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoUpdate({
        target: [t.shop, t.kind, t.claimId],
        set: {
          externalId: keep("external_id"),
          status: keep("status"),
          orderId: keep("order_id"),
          sourceOrderId: keep("source_order_id"),
          orderName: keep("order_name"),
          updatedOn: update.updatedOn,
          lastEventId: update.eventId,
          updatedAt: now,
        },
        setWhere: sql.raw("provider_claims.updated_on <= excluded.updated_on"),
      })
      .returning();
    return rows[0] ?? null;
  }

  /** The shop's claims, the most recently changed first. */
  async listForShop(shop: string, limit = 50): Promise<ClaimRow[]> {
    const t = this.db.t.providerClaims;
    return this.db.orm
      .select()
      .from(t)
      .where(eq(t.shop, shop))
      .orderBy(desc(t.updatedOn), desc(t.updatedAt))
      .limit(limit);
  }

  /** Every claim of one Shopify order (an order may have several). */
  async claimsOfOrder(shop: string, sourceOrderId: string): Promise<ClaimRow[]> {
    const t = this.db.t.providerClaims;
    return this.db.orm
      .select()
      .from(t)
      .where(and(eq(t.shop, shop), eq(t.sourceOrderId, sourceOrderId)));
  }

  /** The shop's orders whose claims' tags could not be applied (a refusal was recorded). */
  async ordersNotTagged(shop: string): Promise<string[]> {
    const t = this.db.t.providerClaims;
    const rows = await this.db.orm
      .selectDistinct({ sourceOrderId: t.sourceOrderId })
      .from(t)
      .where(and(eq(t.shop, shop), isNotNull(t.tagError), isNotNull(t.sourceOrderId)));
    return rows.flatMap((r) => (r.sourceOrderId === null ? [] : [r.sourceOrderId]));
  }

  /** Records which status tag the order now carries for these claims, or why tagging failed. */
  async setTagged(
    shop: string,
    claims: { kind: ClaimKind; claimId: string; taggedStatus: string | null }[],
    tagError: string | null,
  ): Promise<void> {
    const t = this.db.t.providerClaims;
    for (const claim of claims) {
      await this.db.orm
        .update(t)
        .set({
          ...(tagError === null ? { taggedStatus: claim.taggedStatus } : {}),
          tagError: tagError?.slice(0, 500) ?? null,
        })
        .where(and(eq(t.shop, shop), eq(t.kind, claim.kind), eq(t.claimId, claim.claimId)));
    }
  }

  /**
   * The Shopify order a provider order is linked to in this shop: by the Shopify order ID the
   * provider knows, by the provider's order ID within the store, or by the order's name.
   */
  async findOrder(
    shop: string,
    space: { providerBaseUrl: string; storeId: number },
    ref: { orderId: number | null; sourceOrderId: string | null; orderName: string | null },
  ): Promise<{ sourceOrderId: string; orderId: number; orderName: string | null } | null> {
    const t = this.db.t.orderLinks;
    const columns = { sourceOrderId: t.sourceOrderId, orderId: t.orderId, orderName: t.orderName };
    const inSpace = and(
      eq(t.shop, shop),
      eq(t.storeId, space.storeId),
      or(eq(t.providerBaseUrl, space.providerBaseUrl), isNull(t.providerBaseUrl)),
    );
    if (ref.sourceOrderId !== null) {
      const [row] = await this.db.orm
        .select(columns)
        .from(t)
        .where(and(inSpace, eq(t.sourceOrderId, ref.sourceOrderId)));
      if (row) return row;
    }
    if (ref.orderId !== null) {
      const [row] = await this.db.orm
        .select(columns)
        .from(t)
        .where(and(inSpace, eq(t.orderId, ref.orderId)));
      if (row) return row;
    }
    if (ref.orderName !== null) {
      const name = ref.orderName.startsWith("#") ? ref.orderName : `#${ref.orderName}`;
      const [row] = await this.db.orm
        .select(columns)
        .from(t)
        .where(and(inSpace, eq(t.orderName, name)))
        .limit(1);
      if (row) return row;
    }
    return null;
  }

  /** Whether the shop's Shopify orders get `protection-claim:<status>` tags (default: no). */
  async tagsOrders(shop: string): Promise<boolean> {
    const t = this.db.t.claimSettings;
    const [row] = await this.db.orm.select({ on: t.tagOrders }).from(t).where(eq(t.shop, shop));
    return row?.on ?? false;
  }

  async setTagOrders(shop: string, on: boolean): Promise<void> {
    const t = this.db.t.claimSettings;
    const updatedAt = new Date().toISOString();
    await this.db.orm
      .insert(t)
      .values({ shop, tagOrders: on, updatedAt })
      .onConflictDoUpdate({ target: t.shop, set: { tagOrders: on, updatedAt } });
  }
}
