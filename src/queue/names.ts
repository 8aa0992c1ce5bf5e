/** Queue names, one place. The Redis key prefix is per deployment (and per test). */
export const QUEUE = {
  sync: "sync",
  deadLetter: "dead-letter",
  backfill: "backfill",
  /** Periodic work: the reconciliation sweep (one job scheduler per shop, job name "sweep"). */
  maintenance: "maintenance",
} as const;

export const DEFAULT_PREFIX = "connector";

/** Snapshot and dedupe keys share the deployment prefix with BullMQ's own keys. */
export const snapshotKey = (prefix: string, shop: string, orderId: string) =>
  `${prefix}:snap:{${shop}:${orderId}}`;
export const dedupeKey = (prefix: string, shop: string, topic: string, eventId: string) =>
  `${prefix}:seen:${shop}:${topic}:${eventId}`;
