import { eq } from "drizzle-orm";
import type { Db } from "./database.ts";

/**
 * Shopify's deadline for acting on a privacy request: 30 days from receipt (customers/redact,
 * customers/data_request and shop/redact alike).
 */
export const PRIVACY_DUE_MS = 30 * 24 * 3600_000;

/** The record of each privacy request: when it came, when it is due, what was done (IDs only). */
export class PrivacyRequestRepository {
  constructor(private readonly db: Db) {}

  /** Records a request as received now; returns its id for {@link complete}. */
  async received(shop: string, topic: string, summary: Record<string, unknown>): Promise<number> {
    const { privacyRequests } = this.db.t;
    const receivedAt = new Date();
    const [row] = await this.db.orm
      .insert(privacyRequests)
      .values({
        shop,
        topic,
        summary: JSON.stringify(summary),
        receivedAt: receivedAt.toISOString(),
        dueBy: new Date(receivedAt.getTime() + PRIVACY_DUE_MS).toISOString(),
      })
      .returning({ id: privacyRequests.id });
    return (row as { id: number }).id;
  }

  async complete(id: number, summary: Record<string, unknown>): Promise<void> {
    const { privacyRequests } = this.db.t;
    await this.db.orm
      .update(privacyRequests)
      .set({ completedAt: new Date().toISOString(), summary: JSON.stringify(summary) })
      .where(eq(privacyRequests.id, id));
  }
}
