/** Job payloads, shared by producers (receiver, backfill, CLI) and the sync worker. */

export type SyncPriority = "live" | "bulk";

export interface SyncJobData {
  shop: string;
  orderId: string;
  priority: SyncPriority;
  /** What asked for the sync: a webhook topic, "backfill", "resync", "sweep", "dlq-retry". */
  trigger: string;
  /** When the first event behind this job was received (epoch ms), for the lag metric. */
  receivedAt: number;
}

/** What the dead-letter queue keeps for each failure that retrying will not fix. */
export interface DeadLetterData {
  shop: string;
  orderId: string | null;
  topic: string | null;
  /** The reason in words, for an operator. */
  reason: string;
  /** Short machine-readable category: "provider-validation", "config", "payload", "exhausted"… */
  category: string;
  errorClass: string;
  fields?: { path: string; message: string }[];
  request?: { method: string; path: string; body?: unknown };
  response?: { status?: number; requestId?: string; body?: unknown };
  /** The raw webhook body when it could not be used at all (kept, never logged). */
  rawPayload?: string;
  attempts: number;
  firstFailedAt: string;
  lastFailedAt: string;
}
