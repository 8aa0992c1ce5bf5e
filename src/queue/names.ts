import { Cluster } from "ioredis";
import type { RedisConnection } from "../lib/redis-keys.ts";

/** Queue names, one place. The Redis key prefix is per deployment (and per test). */
export const QUEUE = {
  sync: "sync",
  deadLetter: "dead-letter",
  backfill: "backfill",
  /** Product files uploaded on the settings page, imported at bulk priority (src/features/products/). */
  productImport: "product-import",
  /**
   * Background upkeep: the reconciliation sweep (one job scheduler per shop, job name "sweep"),
   * the provider events' retention, the admin API's bulk retries of dead letters ("dlq-retry"),
   * and what waited for a shop's token once it has a new one ("shop-reconnected").
   */
  maintenance: "maintenance",
  /** The provider's webhooks (claims, registrations), one job per stored event. */
  providerEvents: "provider-events",
} as const;

export const DEFAULT_PREFIX = "connector";

/**
 * Snapshot and dedupe keys share the deployment prefix with BullMQ's own keys. An order's
 * snapshot carries its hash tag (the shop and the order), and so do the dedupe marks of the
 * events about the order, which are kept in it (src/ingest/snapshot-store.ts); a mark for an
 * event about no order (lifecycle, privacy) is a key of its own.
 */
export const snapshotKey = (prefix: string, shop: string, orderId: string) =>
  `${prefix}:snap:{${shop}:${orderId}}`;
export const dedupeKey = (prefix: string, shop: string, topic: string, eventId: string) =>
  `${prefix}:seen:${shop}:${topic}:${eventId}`;

/**
 * BullMQ's options for one of our queues. On a Redis Cluster every key of a queue must live in
 * one slot (its scripts touch several), so BullMQ's prefix becomes a hash tag, `{connector}`;
 * our own keys keep the plain prefix and tag themselves (by store, by order). On one Redis the
 * prefix stays as it always was, so an upgrade finds the jobs it left queued.
 */
export function queueOptions<C extends RedisConnection>(
  connection: C,
  prefix: string,
): { connection: C; prefix: string } {
  return { connection, prefix: connection instanceof Cluster ? `{${prefix}}` : prefix };
}
