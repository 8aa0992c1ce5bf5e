import { and, eq, inArray } from "drizzle-orm";
import type { Db } from "../store/index.ts";

/** Per shop: up to when the reconciliation sweep has compared Shopify with the links. */
export class CheckpointRepository {
  constructor(private readonly db: Db) {}

  async get(shop: string): Promise<string | null> {
    const { syncCheckpoints } = this.db.t;
    const [row] = await this.db.orm
      .select({ at: syncCheckpoints.lastReconciledAt })
      .from(syncCheckpoints)
      .where(eq(syncCheckpoints.shop, shop));
    return row?.at ?? null;
  }

  async set(shop: string, at: string) {
    const { syncCheckpoints } = this.db.t;
    await this.db.orm
      .insert(syncCheckpoints)
      .values({ shop, lastReconciledAt: at })
      .onConflictDoUpdate({ target: syncCheckpoints.shop, set: { lastReconciledAt: at } });
  }

  /** When the order's last sync was dead-lettered (its entry discarded or not), or null. */
  async deadLetteredAt(shop: string, sourceOrderId: string): Promise<string | null> {
    const { orderFailures } = this.db.t;
    const [row] = await this.db.orm
      .select({ at: orderFailures.failedAt })
      .from(orderFailures)
      .where(
        and(
          eq(orderFailures.shop, shop),
          eq(orderFailures.sourceOrderId, sourceOrderId),
          inArray(orderFailures.result, ["dead-lettered", "discarded"]),
        ),
      );
    return row?.at ?? null;
  }
}
