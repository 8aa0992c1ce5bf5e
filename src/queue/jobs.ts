/** Job payloads, shared by producers (receiver, backfill, CLI) and the sync worker. */

import type { TraceCarrier } from "../lib/tracing.ts";
import type { OrderTopic } from "../shopify/topics.ts";

export type SyncPriority = "live" | "bulk";

/**
 * What asked for a sync: the webhook topic that brought the order, or `backfill`, `resync`,
 * `sweep` (the reconciliation sweep), `dlq-retry` (an operator's retry from the dead-letter
 * queue).
 */
export type SyncTrigger = OrderTopic | "backfill" | "resync" | "sweep" | "dlq-retry";

export interface SyncJobData {
  shop: string;
  orderId: string;
  priority: SyncPriority;
  trigger: SyncTrigger;
  /** When the first event behind this job was received (epoch ms), for the lag metric. */
  receivedAt: number;
  /**
   * A limiter slot the producer already holds for this job's first provider call (the backfill
   * feeder paces itself by the budget, so its jobs never wait in the delayed set).
   */
  prepaidSlot?: string;
  /**
   * The trace context of the span that queued the job (W3C `traceparent`), when traces are on:
   * the worker's span continues that trace (src/lib/tracing.ts).
   */
  trace?: TraceCarrier;
}

export type { FailureCategory } from "../sync/failure.ts";

import type { FailureCategory } from "../sync/failure.ts";

/** One earlier failure of a dead-lettered order, kept when it failed again. */
export interface DeadLetterFailure {
  at: string;
  topic: string | null;
  category: FailureCategory;
  reason: string;
  errorClass: string;
  status?: number;
}

/** What an operator's retry last did with an entry that stayed in the queue. */
export interface DeadLetterRetryNote {
  at: string;
  result: string;
}

/**
 * What the dead-letter queue keeps for each failure that retrying will not fix. The request and
 * response bodies may hold customer data: they are kept here for the operator and never logged.
 */
export interface DeadLetterData {
  shop: string;
  orderId: string | null;
  /** The webhook topic (or trigger: "resync", "backfill", "dlq-retry"…) of the failed run. */
  topic: string | null;
  /** X-Shopify-Webhook-Id of a payload that could not be used, to re-ingest it. */
  webhookId?: string;
  /** The reason in words, for an operator. */
  reason: string;
  category: FailureCategory;
  errorClass: string;
  fields?: { path: string; message: string }[];
  request?: { method: string; path: string; body?: unknown };
  response?: { status?: number; requestId?: string; body?: unknown };
  /** The raw webhook body when it could not be used at all (kept, never logged). */
  rawPayload?: string;
  /** Every attempt so far, across operator retries. */
  attempts: number;
  firstFailedAt: string;
  lastFailedAt: string;
  /** Earlier failures of the same order, oldest first (the current one is the fields above). */
  history?: DeadLetterFailure[];
  /** How many times an operator re-queued this order from the dead-letter queue. */
  retries?: number;
  /** Set when a retry could not re-queue the entry, saying why. */
  lastRetry?: DeadLetterRetryNote;
  /** Set when a privacy request removed the stored bodies (customers/redact). */
  redactedAt?: string;
  /**
   * Set when the entry was made again from the database's record of the order's failure, after
   * Redis lost it (ops/dead-letter-restore.ts): the request, the response and the history were
   * kept in Redis only.
   */
  restoredAt?: string;
}
