import { and, eq } from "drizzle-orm";
import type { Db } from "../store/index.ts";
import { schema } from "../store/index.ts";

const { syncCheckpoints, orderFailures } = schema;

/** Per shop: up to when the reconciliation sweep has compared Shopify with the links. */
export class CheckpointRepository {
  constructor(private readonly db: Db) {}

  async get(shop: string): Promise<string | null> {
    return (
      this.db
        .select({ at: syncCheckpoints.lastReconciledAt })
        .from(syncCheckpoints)
        .where(eq(syncCheckpoints.shop, shop))
        .get()?.at ?? null
    );
  }

  async set(shop: string, at: string) {
    this.db
      .insert(syncCheckpoints)
      .values({ shop, lastReconciledAt: at })
      .onConflictDoUpdate({ target: syncCheckpoints.shop, set: { lastReconciledAt: at } })
      .run();
  }

  /** When the order's last sync was dead-lettered, or null. */
  async deadLetteredAt(shop: string, sourceOrderId: string): Promise<string | null> {
    return (
      this.db
        .select({ at: orderFailures.failedAt })
        .from(orderFailures)
        .where(
          and(
            eq(orderFailures.shop, shop),
            eq(orderFailures.sourceOrderId, sourceOrderId),
            eq(orderFailures.result, "dead-lettered"),
          ),
        )
        .get()?.at ?? null
    );
  }
}
