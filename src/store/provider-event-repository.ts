import { and, asc, desc, eq, gt, inArray, isNull, like, lt, ne, or } from "drizzle-orm";
import {
  type CustomerMatch,
  eventConcerns,
  type RedactionReason,
  redactedBody,
  unwrapEvent,
} from "../provider/events.ts";
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

  /**
   * Writes `to` over the account's sealed secret only while it still holds `from` (a key
   * rotation's re-seal; a secret set meanwhile is newer and stays). Answers whether it wrote.
   */
  async replace(account: ProviderAccount, from: string, to: string): Promise<boolean> {
    const t = this.db.t.providerWebhookSecrets;
    const written = await this.db.orm
      .update(t)
      .set({ secretSealed: to, updatedAt: new Date().toISOString() })
      .where(
        and(
          eq(t.providerBaseUrl, account.providerBaseUrl),
          eq(t.clientId, account.clientId),
          eq(t.secretSealed, from),
        ),
      )
      .returning({ clientId: t.clientId });
    return written.length > 0;
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
  /** What the event is (events.ts, eventIdentity): one row per identity, store and environment. */
  identity?: string;
  /** SHA-256 of the raw body: one row per body, store and environment. */
  bodySha256?: string;
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
  /** The body as received (customer data: show or store it, never log it), or its IDs. */
  payload: string;
  /** When the body was reduced to its IDs (privacy request or retention); null: as received. */
  redactedAt: string | null;
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

  /** Every shop bound to this provider store, installed or not (not yet redacted). */
  async shopsBoundTo(storeId: number): Promise<string[]> {
    const { shops } = this.db.t;
    const rows = await this.db.orm
      .select({ shop: shops.shop })
      .from(shops)
      .where(eq(shops.storeId, storeId));
    return rows.map((r) => r.shop);
  }

  /**
   * Records a verified delivery. A second delivery of the same event is not stored again: the
   * same delivery ID, the same identity (kind, resource ID, `updatedOn`) or the same body
   * bytes, in the same store and environment. It answers the first one's row and whether it
   * was processed.
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
          or(
            eq(t.eventId, event.eventId),
            event.identity === undefined ? undefined : eq(t.identity, event.identity),
            event.bodySha256 === undefined ? undefined : eq(t.bodySha256, event.bodySha256),
          ),
        ),
      )
      .orderBy(asc(t.id))
      .limit(1);
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

  private scope(scope: ShopEventScope) {
    const t = this.db.t.providerEvents;
    const named = like(t.shops, `%${JSON.stringify(scope.shop)}%`);
    return scope.storeId === null ? named : or(eq(t.storeId, scope.storeId), named);
  }

  /** Replaces the bodies of these rows by their IDs, one row at a time (each its own IDs). */
  private async redactRows(
    rows: { id: number; payload: string }[],
    reason: RedactionReason,
    now: string,
  ): Promise<void> {
    const t = this.db.t.providerEvents;
    for (const row of rows) {
      await this.db.orm
        .update(t)
        .set({ payload: redactedBody(row.payload, reason), redactedAt: now })
        .where(and(eq(t.id, row.id), isNull(t.redactedAt)));
    }
  }

  /**
   * customers/redact: every stored body of the shop's store(s) that names the customer's email
   * or is about one of their orders is reduced to its IDs. Returns how many.
   */
  async redactCustomer(scope: ShopEventScope, match: CustomerMatch): Promise<number> {
    const t = this.db.t.providerEvents;
    const now = new Date().toISOString();
    let after = 0;
    let redacted = 0;
    for (;;) {
      const rows = await this.db.orm
        .select({ id: t.id, payload: t.payload })
        .from(t)
        .where(and(this.scope(scope), isNull(t.redactedAt), gt(t.id, after)))
        .orderBy(asc(t.id))
        .limit(BATCH);
      const hits = rows.filter((row) => eventConcerns(row.payload, match));
      await this.redactRows(hits, "customer", now);
      redacted += hits.length;
      const last = rows.at(-1);
      if (!last || rows.length < BATCH) return redacted;
      after = last.id;
    }
  }

  /**
   * shop/redact: the events of a store no other shop is bound to are deleted; on a store other
   * shops share, the events verified only for this shop are deleted and the others forget it.
   * `remaining` lists the other shops bound to each store. Returns what was deleted and kept.
   */
  async forgetShop(
    scope: ShopEventScope,
    remaining: (storeId: number) => Promise<string[]>,
  ): Promise<{ deleted: number; kept: number }> {
    const t = this.db.t.providerEvents;
    const rows = await this.db.orm
      .select({ id: t.id, storeId: t.storeId, shops: t.shops })
      .from(t)
      .where(this.scope(scope));
    const others = new Map<number, Set<string>>();
    const toDelete: number[] = [];
    let kept = 0;
    for (const row of rows) {
      if (!others.has(row.storeId)) others.set(row.storeId, new Set(await remaining(row.storeId)));
      const sharing = others.get(row.storeId) ?? new Set<string>();
      const verifiedFor = (JSON.parse(row.shops) as string[]).filter((s) => s !== scope.shop);
      if (sharing.size === 0 || !verifiedFor.some((s) => sharing.has(s))) {
        toDelete.push(row.id);
        continue;
      }
      kept += 1;
      await this.db.orm
        .update(t)
        .set({ shops: JSON.stringify(verifiedFor) })
        .where(eq(t.id, row.id));
    }
    for (let i = 0; i < toDelete.length; i += BATCH) {
      await this.db.orm.delete(t).where(inArray(t.id, toDelete.slice(i, i + BATCH)));
    }
    return { deleted: toDelete.length, kept };
  }

  /**
   * Retention: the bodies of events received before `cutoff` are reduced to their IDs (the rows,
   * their topic, times and outcome stay). Returns how many.
   */
  async pruneBodies(cutoff: Date): Promise<number> {
    const t = this.db.t.providerEvents;
    const now = new Date().toISOString();
    let pruned = 0;
    for (;;) {
      const rows = await this.db.orm
        .select({ id: t.id, payload: t.payload })
        .from(t)
        .where(and(isNull(t.redactedAt), lt(t.receivedAt, cutoff.toISOString())))
        .orderBy(asc(t.id))
        .limit(BATCH);
      await this.redactRows(rows, "retention", now);
      pruned += rows.length;
      if (rows.length < BATCH) return pruned;
    }
  }
}

/** Rows read at a time when bodies are scanned or redacted. */
const BATCH = 500;

/** The events a shop could have seen: about its store, or verified for it. */
export interface ShopEventScope {
  shop: string;
  storeId: number | null;
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
