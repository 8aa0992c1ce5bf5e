import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { SyncMetrics } from "../engine/sync-processor.ts";
import type { ResponseInfo } from "../provider/index.ts";
import { isTopic } from "../shopify/index.ts";

/** Lag buckets in seconds: a live order usually lands in well under a second; a backlog in minutes. */
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600];

/** Provider paths without their IDs, so a label has a handful of values, not one per order. */
export function operationOf(method: string, path: string): string {
  const template = path
    .split("?")[0]
    ?.replace(/\/\d+(?=\/|$)/g, "/:id")
    .replace(/\/[0-9a-f-]{36}(?=\/|$)/gi, "/:id");
  return `${method.toUpperCase()} ${template ?? path}`;
}

/**
 * The `topic` label of a webhook: a topic the connector knows, `provider` (the provider's
 * webhooks), `unknown` (refused before its topic header was trusted), or `other`. The topic
 * header is the sender's text (and not covered by Shopify's HMAC): each new string would
 * otherwise be a new series.
 */
export function webhookTopicLabel(topic: string): string {
  return isTopic(topic) || topic === "provider" || topic === "unknown" ? topic : "other";
}

/** Source of values read only when scraped (queue depths), registered by the web process. */
export type QueueDepthSource = () => Promise<{ queue: string; state: string; count: number }[]>;

/** Jobs waiting per sync queue shard and priority (live, waiter, flood, bulk), read when scraped. */
export type PriorityDepthSource = () => Promise<
  { queue: string; priority: string; count: number }[]
>;

/** The backfills that have not finished, read when scraped. */
export type BackfillSource = () => Promise<
  { status: string; done: number; total: number | null }[]
>;

/** The newest heartbeat of each role (epoch ms), read from Redis when scraped. */
export type HeartbeatSource = () => Promise<{ role: string; at: number }[]>;

/**
 * How many provider stores get a `store` label of their own; the rest share `other`. A store is
 * the provider account of one installed shop, so the series grow with the shops installed and
 * stop at this bound (METRICS_STORE_SERIES).
 */
export const DEFAULT_STORE_SERIES = 500;

/** The `store` label: the provider's numeric store ID (no shop domain, nothing a customer typed). */
export class StoreLabels {
  readonly #seen = new Set<string>();
  constructor(readonly max: number = DEFAULT_STORE_SERIES) {}

  of(storeId: number | null | undefined): string {
    if (storeId === null || storeId === undefined) return "none";
    const label = String(storeId);
    if (this.#seen.has(label)) return label;
    if (this.#seen.size >= this.max) return "other";
    this.#seen.add(label);
    return label;
  }
}

/**
 * The connector's Prometheus metrics, one registry per process (ConnectorContext.metrics).
 * Names follow Prometheus conventions: `_total` counters, seconds for durations. No label
 * carries a shop, an order or anything a customer typed.
 */
export class ConnectorMetrics {
  readonly registry = new Registry();

  readonly webhooks = new Counter({
    name: "connector_webhooks_received_total",
    help: "Webhooks received, by topic and outcome (queued, stale, duplicate, dead-lettered, rejected:…, unavailable…)",
    labelNames: ["topic", "outcome"] as const,
    registers: [this.registry],
  });

  readonly jobs = new Counter({
    name: "connector_sync_jobs_total",
    help: "Sync jobs finished, by outcome (synced, unchanged, waiting, dead-lettered, skipped)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });

  readonly providerRequests = new Counter({
    name: "connector_provider_requests_total",
    help: "Provider HTTP requests, by operation and status ('error' when no response came back)",
    labelNames: ["operation", "status"] as const,
    registers: [this.registry],
  });

  readonly providerRateLimited = new Counter({
    name: "connector_provider_rate_limited_total",
    help: "Provider answers 429 (the budget was exceeded, by us or another client of the store)",
    registers: [this.registry],
  });

  readonly providerDuration = new Histogram({
    name: "connector_provider_request_duration_seconds",
    help: "Provider HTTP request duration",
    labelNames: ["operation"] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly limiterWaits = new Counter({
    name: "connector_limiter_waits_total",
    help: "Times a sync job was delayed for the per-store budget, by reason (window, blocked, reserved, paced)",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly lag = new Histogram({
    name: "connector_sync_lag_seconds",
    help: "From the webhook's arrival (or the resync/retry request) to the provider's acknowledgement of the order's last change, by the job's priority (live, bulk)",
    labelNames: ["priority"] as const,
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });

  readonly storeRequests = new Counter({
    name: "connector_store_provider_requests_total",
    help: "Provider HTTP responses per provider store (store: the provider's store ID; beyond METRICS_STORE_SERIES stores, 'other')",
    labelNames: ["store"] as const,
    registers: [this.registry],
  });

  readonly storeRateLimited = new Counter({
    name: "connector_store_provider_rate_limited_total",
    help: "Provider 429s per provider store",
    labelNames: ["store"] as const,
    registers: [this.registry],
  });

  readonly storeBudgetUsed = new Gauge({
    name: "connector_store_budget_used_ratio",
    help: "Share of the store's provider budget used in the current window, from the last response's RateLimit-Limit and RateLimit-Remaining headers (0 to 1)",
    labelNames: ["store"] as const,
    registers: [this.registry],
    aggregator: "max",
  });

  readonly deadLetters = new Counter({
    name: "connector_dead_letters_total",
    help: "Entries written to the dead-letter queue, by reason (provider-validation, config, mapping, provider-not-found, provider-conflict, exhausted, payload)",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly tokenRefreshes = new Counter({
    name: "connector_token_refreshes_total",
    help: "Shopify access token refreshes, by outcome (ok; refused: the refresh token is no longer accepted and the shop is paused; failed: the answer was lost, tried again on the next call)",
    labelNames: ["kind", "outcome"] as const,
    registers: [this.registry],
  });

  readonly sweepChecked = new Counter({
    name: "connector_sweep_orders_checked_total",
    help: "Orders the reconciliation sweep read from Shopify, per provider store",
    labelNames: ["store"] as const,
    registers: [this.registry],
  });

  readonly sweepMissed = new Counter({
    name: "connector_sweep_orders_missed_total",
    help: "Orders the reconciliation sweep found changed in Shopify but not synced (a webhook that never came) and queued, per provider store",
    labelNames: ["store"] as const,
    registers: [this.registry],
  });

  readonly bodiesRefused = new Counter({
    name: "connector_request_bodies_refused_total",
    help: "Request bodies answered 503 because the bodies still arriving before their sender is known would pass REQUEST_BODIES_MAX_BYTES",
    registers: [this.registry],
  });

  readonly stores: StoreLabels;

  constructor(options: { defaultMetrics?: boolean; storeSeries?: number } = {}) {
    this.stores = new StoreLabels(options.storeSeries);
    if (options.defaultMetrics) {
      collectDefaultMetrics({ register: this.registry, prefix: "connector_" });
    }
  }

  /** The hooks the sync processor calls. */
  readonly sync: SyncMetrics = {
    jobDone: (outcome) => this.jobs.inc({ outcome }),
    // HTTP statuses are counted from the client's responses; only calls that got none are here.
    providerCall: (status) => {
      if (status === "error") this.providerRequests.inc({ operation: "unknown", status: "error" });
    },
    limiterWait: (reason) => this.limiterWaits.inc({ reason }),
    lag: (ms, priority) => this.lag.observe({ priority }, ms / 1000),
    deadLettered: (category) => this.deadLetters.inc({ reason: category }),
  };

  /** The webhook route's outcome hook; a body that could not be read is a `payload` dead letter. */
  webhook = (topic: string, outcome: string) => {
    this.webhooks.inc({ topic: webhookTopicLabel(topic), outcome });
    if (outcome === "dead-lettered") this.deadLetters.inc({ reason: "payload" });
  };

  /** The provider client's response hook. */
  providerResponse = (info: ResponseInfo) => {
    const operation = operationOf(info.method, info.path);
    this.providerRequests.inc({ operation, status: String(info.status) });
    this.providerDuration.observe({ operation }, info.durationMs / 1000);
    if (info.status === 429) this.providerRateLimited.inc();
    if (info.storeId === undefined) return;
    const store = this.stores.of(info.storeId);
    this.storeRequests.inc({ store });
    if (info.status === 429) this.storeRateLimited.inc({ store });
    const { limit, remaining } = info.rateLimit;
    if (info.status === 429) this.storeBudgetUsed.set({ store }, 1);
    else if (limit && remaining !== undefined) {
      this.storeBudgetUsed.set({ store }, Math.min(1, Math.max(0, (limit - remaining) / limit)));
    }
  };

  /** Shopify's token refreshes (ShopTokens' hook). */
  tokenRefresh = (outcome: "ok" | "refused" | "failed") =>
    this.tokenRefreshes.inc({ kind: "shopify", outcome });

  /** One shop's reconciliation sweep: what it read and what the webhooks had missed. */
  swept = (storeId: number | null, result: { checked: number; queued: number }) => {
    const store = this.stores.of(storeId);
    this.sweepChecked.inc({ store }, result.checked);
    this.sweepMissed.inc({ store }, result.queued);
  };

  /** Shops whose last webhook subscription check failed, counted when scraped. */
  trackSubscriptionFailures(count: () => Promise<number>): void {
    if (this.registry.getSingleMetric("connector_webhook_subscription_failing_shops")) return;
    new Gauge({
      name: "connector_webhook_subscription_failing_shops",
      help: "Shops whose last webhook subscription check failed (the check at start-up and in each sweep repairs them)",
      registers: [this.registry],
      aggregator: "max",
      async collect() {
        this.set(await count());
      },
    });
  }

  /** Bytes held now by bodies still arriving before their sender is known, read when scraped. */
  trackBodyBytes(held: () => number): void {
    if (this.registry.getSingleMetric("connector_request_body_bytes")) return;
    new Gauge({
      name: "connector_request_body_bytes",
      help: "Bytes reserved by request bodies still arriving before their sender is known (REQUEST_BODIES_MAX_BYTES bounds it per process)",
      registers: [this.registry],
      collect() {
        this.set(held());
      },
    });
  }

  /** Queue depths, read from Redis at scrape time (registered once, by the web process). */
  trackQueues(source: QueueDepthSource): void {
    if (this.registry.getSingleMetric("connector_queue_jobs")) return;
    new Gauge({
      name: "connector_queue_jobs",
      help: "Jobs per queue and state, read from Redis when scraped",
      labelNames: ["queue", "state"] as const,
      registers: [this.registry],
      // Every web process of a cluster reads the same queues: the primary's sum takes one.
      aggregator: "max",
      async collect() {
        this.reset();
        for (const { queue, state, count } of await source()) this.set({ queue, state }, count);
      },
    });
  }

  /** Sync jobs waiting to run per shard and priority, read from Redis at scrape time. */
  trackPriorities(source: PriorityDepthSource): void {
    if (this.registry.getSingleMetric("connector_sync_queue_priority_jobs")) return;
    new Gauge({
      name: "connector_sync_queue_priority_jobs",
      help: "Sync jobs waiting per queue shard and priority (live, waiter: a live job back for its slot, flood, bulk), read from Redis when scraped",
      labelNames: ["queue", "priority"] as const,
      registers: [this.registry],
      aggregator: "max",
      async collect() {
        this.reset();
        for (const { queue, priority, count } of await source())
          this.set({ queue, priority }, count);
      },
    });
  }

  /** The unfinished backfills and their progress, read from the link store at scrape time. */
  trackBackfills(source: BackfillSource): void {
    if (this.registry.getSingleMetric("connector_backfills")) return;
    new Gauge({
      name: "connector_backfills",
      help: "Backfills not finished, by status (running, paused)",
      labelNames: ["status"] as const,
      registers: [this.registry],
      aggregator: "max",
      async collect() {
        const rows = await source();
        this.reset();
        this.set({ status: "running" }, 0);
        this.set({ status: "paused" }, 0);
        for (const row of rows) this.inc({ status: row.status });
      },
    });
    new Gauge({
      name: "connector_backfill_orders",
      help: "Orders of the unfinished backfills: done (queued so far) and expected (Shopify's count, or done while it is not known)",
      labelNames: ["state"] as const,
      registers: [this.registry],
      aggregator: "max",
      async collect() {
        const rows = await source();
        this.set(
          { state: "done" },
          rows.reduce((sum, r) => sum + r.done, 0),
        );
        this.set(
          { state: "expected" },
          rows.reduce((sum, r) => sum + (r.total ?? r.done), 0),
        );
      },
    });
  }

  /** The newest heartbeat of each role (web, worker), read from Redis at scrape time. */
  trackHeartbeats(source: HeartbeatSource): void {
    if (this.registry.getSingleMetric("connector_role_heartbeat_timestamp_seconds")) return;
    new Gauge({
      name: "connector_role_heartbeat_timestamp_seconds",
      help: "When a process of the role last reported alive (Unix seconds), over every process sharing the Redis",
      labelNames: ["role"] as const,
      registers: [this.registry],
      aggregator: "max",
      async collect() {
        this.reset();
        for (const { role, at } of await source()) this.set({ role }, at / 1000);
      },
    });
  }

  contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
