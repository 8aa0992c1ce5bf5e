import { and, asc, desc, eq, inArray, isNull, ne } from "drizzle-orm";
import { unwrapEvent } from "../provider/events.ts";
import type { Db } from "./database.ts";
import type { providerEvents } from "./schema.ts";

/** A provider account: the environment (API base URL) and the client ID. */
export interface ProviderAccount {
  providerBaseUrl: string;
  clientId: string;
}

/** The provider's webhook secrets, one per account, sealed by the caller (the secret box). */
export class ProviderWebhookSecretRepository {
  constructor(private readonly db: Db) {}

  async get(account: ProviderAccount): Promise<string | null> {
    const t = this.db.t.providerWebhookSecrets;
    const [row] = await this.db.orm
      .select({ sealed: t.secretSealed })
      .from(t)
      .where(and(eq(t.providerBaseUrl, account.providerBaseUrl), eq(t.clientId, account.clientId)));
    return row?.sealed ?? null;
  }

  async set(account: ProviderAccount, sealed: string): Promise<void> {
    const t = this.db.t.providerWebhookSecrets;
    const updatedAt = new Date().toISOString();
    await this.db.orm
      .insert(t)
      .values({ ...account, secretSealed: sealed, updatedAt })
      .onConflictDoUpdate({
        target: [t.providerBaseUrl, t.clientId],
        set: { secretSealed: sealed, updatedAt },
      });
  }

  async list(): Promise<(ProviderAccount & { sealed: string })[]> {
    const t = this.db.t.providerWebhookSecrets;
    return this.db.orm
      .select({ providerBaseUrl: t.providerBaseUrl, clientId: t.clientId, sealed: t.secretSealed })
      .from(t);
  }
}

export type ProviderEventKind = "claim" | "shipping_claim" | "registration" | "unknown";

export interface NewProviderEvent {
  providerBaseUrl: string;
  storeId: number;
  eventId: string;
  shops: string[];
  topic: string | null;
  kind: ProviderEventKind;
  apiVersion: string | null;
  sentAt: string;
  payload: string;
}

export interface ProviderEventRow {
  id: number;
  providerBaseUrl: string;
  storeId: number;
  eventId: string;
  shops: string[];
  topic: string | null;
  kind: ProviderEventKind;
  apiVersion: string | null;
  sentAt: string;
  receivedAt: string;
  processedAt: string | null;
  outcome: string | null;
  /** The body as received (customer data: show or store it, never log it). */
  payload: string;
}

/** A shop bound to a provider store: whose account may have signed an event about it. */
export interface StoreShop {
  shop: string;
  providerBaseUrl: string | null;
  providerClientId: string | null;
}

/** The provider's events as received: one row per event ID and store, then its processing. */
export class ProviderEventRepository {
  constructor(private readonly db: Db) {}

  /** The installed shops bound to this provider store (in any environment). */
  async shopsOnStore(storeId: number): Promise<StoreShop[]> {
    const { shops } = this.db.t;
    return this.db.orm
      .select({
        shop: shops.shop,
        providerBaseUrl: shops.providerBaseUrl,
        providerClientId: shops.providerClientId,
      })
      .from(shops)
      .where(and(eq(shops.storeId, storeId), ne(shops.status, "uninstalled")));
  }

  /**
   * Records a verified delivery. A second delivery of the same event (same ID, store and
   * environment) is not stored again: it answers the first one's row and whether it was
   * processed.
   */
  async record(
    event: NewProviderEvent,
  ): Promise<{ id: number; duplicate: boolean; processed: boolean }> {
    const t = this.db.t.providerEvents;
    const [inserted] = await this.db.orm
      .insert(t)
      .values({
        ...event,
        shops: JSON.stringify(event.shops),
        receivedAt: new Date().toISOString(),
      })
      .onConflictDoNothing()
      .returning({ id: t.id });
    if (inserted) return { id: inserted.id, duplicate: false, processed: false };
    const [existing] = await this.db.orm
      .select({ id: t.id, processedAt: t.processedAt })
      .from(t)
      .where(
        and(
          eq(t.providerBaseUrl, event.providerBaseUrl),
          eq(t.storeId, event.storeId),
          eq(t.eventId, event.eventId),
        ),
      );
    if (!existing) throw new Error("a provider event conflicted with a row that is gone");
    return { id: existing.id, duplicate: true, processed: existing.processedAt !== null };
  }

  async get(id: number): Promise<ProviderEventRow | null> {
    const t = this.db.t.providerEvents;
    const [row] = await this.db.orm.select().from(t).where(eq(t.id, id));
    return row ? toEvent(row) : null;
  }

  /** Marks the event processed, once: false when another run already did. */
  async markProcessed(id: number, outcome: string): Promise<boolean> {
    const t = this.db.t.providerEvents;
    const rows = await this.db.orm
      .update(t)
      .set({ processedAt: new Date().toISOString(), outcome: outcome.slice(0, 500) })
      .where(and(eq(t.id, id), isNull(t.processedAt)))
      .returning({ id: t.id });
    return rows.length > 0;
  }

  /** Events not processed yet, oldest first (to queue again after an outage). */
  async unprocessed(limit: number): Promise<number[]> {
    const t = this.db.t.providerEvents;
    const rows = await this.db.orm
      .select({ id: t.id })
      .from(t)
      .where(isNull(t.processedAt))
      .orderBy(asc(t.id))
      .limit(limit);
    return rows.map((r) => r.id);
  }

  /**
   * The newest events about a store, of the given kinds (all kinds when omitted); in any
   * environment when `providerBaseUrl` is null.
   */
  async recent(
    space: { providerBaseUrl: string | null; storeId: number },
    options: { kinds?: ProviderEventKind[]; limit?: number } = {},
  ): Promise<ProviderEventRow[]> {
    const t = this.db.t.providerEvents;
    const rows = await this.db.orm
      .select()
      .from(t)
      .where(
        and(
          space.providerBaseUrl === null ? undefined : eq(t.providerBaseUrl, space.providerBaseUrl),
          eq(t.storeId, space.storeId),
          options.kinds ? inArray(t.kind, options.kinds) : undefined,
        ),
      )
      .orderBy(desc(t.receivedAt), desc(t.id))
      .limit(options.limit ?? 50);
    return rows.map(toEvent);
  }

  /**
   * The newest registration events of a store (`registration/created`, `…/updated`), each with
   * the registration as sent: for the registrations view.
   */
  async recentRegistrationEvents(
    space: { providerBaseUrl: string | null; storeId: number },
    limit = 50,
  ): Promise<(ProviderEventRow & { registration: Record<string, unknown> | null })[]> {
    const rows = await this.recent(space, { kinds: ["registration"], limit });
    return rows.map((row) => ({ ...row, registration: registrationOf(row.payload) }));
  }
}

function toEvent(row: typeof providerEvents.$inferSelect): ProviderEventRow {
  return { ...row, shops: JSON.parse(row.shops) as string[] };
}

/** The registration inside a stored body (the body itself, or wrapped). */
function registrationOf(payload: string): Record<string, unknown> | null {
  try {
    return unwrapEvent(JSON.parse(payload)).resource;
  } catch {
    return null;
  }
}
