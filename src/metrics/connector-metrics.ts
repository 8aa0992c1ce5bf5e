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
    help: "From the webhook's arrival (or the resync/retry request) to the provider's acknowledgement of the order's last change",
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
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
    lag: (ms) => this.lag.observe(ms / 1000),
  };

  /** The webhook route's outcome hook. */
  webhook = (topic: string, outcome: string) =>
    this.webhooks.inc({ topic: webhookTopicLabel(topic), outcome });

  /** The provider client's response hook. */
  providerResponse = (info: ResponseInfo) => {
    const operation = operationOf(info.method, info.path);
    this.providerRequests.inc({ operation, status: String(info.status) });
    this.providerDuration.observe({ operation }, info.durationMs / 1000);
    if (info.status === 429) this.providerRateLimited.inc();
  };

  /** Queue depths, read from Redis at scrape time (registered once, by the web process). */
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

  contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
