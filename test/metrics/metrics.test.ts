import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { StoreLabels } from "../../src/metrics/connector-metrics.ts";
import {
  ConnectorMetrics,
  operationOf,
  startHeartbeat,
  startMetricsServer,
} from "../../src/metrics/index.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.close();
  pipeline = undefined;
});

async function scrape(p: Pipeline, headers: Record<string, string> = {}) {
  const response = await p.web.app.request("/metrics", { headers });
  return {
    status: response.status,
    text: await response.text(),
    type: response.headers.get("content-type"),
  };
}

/** The value of one sample, e.g. `connector_sync_jobs_total{outcome="synced"}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : undefined;
}

describe("/metrics", { timeout: 60_000 }, () => {
  it("names provider operations without their IDs", () => {
    expect(operationOf("post", "/orders/10001/fulfillments")).toBe("POST /orders/:id/fulfillments");
    expect(operationOf("DELETE", "/orders/1/line-items/22")).toBe(
      "DELETE /orders/:id/line-items/:id",
    );
    expect(operationOf("GET", "/orders?sourceOrderId=5")).toBe("GET /orders");
  });

  it("counts webhooks, jobs, provider requests and the lag after a sync", async () => {
    pipeline = await startPipeline();
    await pipeline.send("orders/create", orderPayload(shippedOrder(5_570_001)));
    // An older version, delivered after the newer one: stale.
    await pipeline.send(
      "orders/create",
      orderPayload(shippedOrder(5_570_001, { updatedAt: "2026-11-01T10:00:00Z" })),
      { webhookId: "again" },
    );
    await pipeline.drain();

    const { status, text, type } = await scrape(pipeline);
    expect(status).toBe(200);
    expect(type).toContain("text/plain");
    expect(
      sample(text, 'connector_webhooks_received_total{topic="orders/create",outcome="queued"}'),
    ).toBe(1);
    expect(
      sample(text, 'connector_webhooks_received_total{topic="orders/create",outcome="stale"}'),
    ).toBe(1);
    expect(sample(text, 'connector_sync_jobs_total{outcome="synced"}')).toBe(1);
    expect(
      sample(text, 'connector_provider_requests_total{operation="POST /orders",status="201"}'),
    ).toBe(1);
    expect(
      sample(
        text,
        'connector_provider_requests_total{operation="POST /orders/:id/fulfillments",status="201"}',
      ),
    ).toBe(1);
    expect(sample(text, 'connector_sync_lag_seconds_count{priority="live"}')).toBe(1);
    expect(sample(text, 'connector_sync_lag_seconds_bucket{le="+Inf",priority="live"}')).toBe(1);
    // Per provider store: the two calls, and the budget the provider's headers say is used.
    expect(sample(text, 'connector_store_provider_requests_total{store="1001"}')).toBe(2);
    const used = sample(text, 'connector_store_budget_used_ratio{store="1001"}');
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(1);
    expect(sample(text, 'connector_sync_queue_priority_jobs{queue="sync",priority="live"}')).toBe(
      0,
    );
    expect(sample(text, 'connector_queue_jobs{queue="sync",state="waiting"}')).toBe(0);
    expect(sample(text, 'connector_queue_jobs{queue="dead-letter",state="waiting"}')).toBe(0);
    // Nothing about the shop or the customer is in a label.
    expect(text).not.toContain("lifecycle-shop");
    expect(text).not.toContain("grace@example.com");
  });

  it("counts 429s and limiter waits when another client spends the store's budget", async () => {
    pipeline = await startPipeline({
      sandbox: { rateLimit: 3, windowMs: 1_000 },
      env: { PROVIDER_RATE_LIMIT: "3", PROVIDER_RATE_WINDOW_MS: "1000" },
    });
    pipeline.sandbox.consume(1001, 3);
    for (let i = 0; i < 4; i++) {
      await pipeline.send(
        "orders/create",
        orderPayload(shippedOrder(5_580_001 + i * 10, { fulfillments: [] })),
      );
    }
    await pipeline.drain(30_000);
    const { text } = await scrape(pipeline);
    expect(sample(text, "connector_provider_rate_limited_total")).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'connector_store_provider_rate_limited_total{store="1001"}'),
    ).toBeGreaterThanOrEqual(1);
    const waits = text
      .split("\n")
      .filter((l) => l.startsWith("connector_limiter_waits_total{"))
      .reduce((sum, l) => sum + Number(l.split(" ")[1]), 0);
    expect(waits).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'connector_sync_jobs_total{outcome="synced"}')).toBe(4);
    expect(pipeline.sandbox.state.admittedFor(1001).length).toBeGreaterThanOrEqual(4);
  });

  it("shows waiting jobs per priority, backfill progress and dead letters by reason", async () => {
    pipeline = await startPipeline({ workers: 0 });
    await pipeline.send("orders/create", orderPayload(shippedOrder(5_590_001)));
    await pipeline.send("orders/create", orderPayload(shippedOrder(5_590_011)));
    const bad = await pipeline.send("orders/create", { id: 5_590_021, line_items: "not a list" });
    expect(((await bad.json()) as { outcome: string }).outcome).toBe("dead-lettered");
    const backfill = await pipeline.ctx.backfills.create({
      shop: TEST_SHOP,
      since: null,
      until: new Date().toISOString(),
    });
    await pipeline.ctx.backfills.setTotal(backfill.id, 40);
    await pipeline.ctx.backfills.saveProgress(backfill.id, backfill.cursor, 10);

    const { text } = await scrape(pipeline);
    expect(sample(text, 'connector_sync_queue_priority_jobs{queue="sync",priority="live"}')).toBe(
      2,
    );
    expect(sample(text, 'connector_sync_queue_priority_jobs{queue="sync",priority="bulk"}')).toBe(
      0,
    );
    expect(sample(text, 'connector_dead_letters_total{reason="payload"}')).toBe(1);
    expect(sample(text, 'connector_backfills{status="running"}')).toBe(1);
    expect(sample(text, 'connector_backfill_orders{state="done"}')).toBe(10);
    expect(sample(text, 'connector_backfill_orders{state="expected"}')).toBe(40);
  });

  it("shows each role's newest heartbeat, written to Redis by any process", async () => {
    pipeline = await startPipeline({ workers: 0 });
    const before = Date.now();
    const beat = startHeartbeat(pipeline.ctx.redis, pipeline.ctx.prefix, "worker");
    try {
      const at = async () =>
        sample(
          (await scrape(pipeline as Pipeline)).text,
          'connector_role_heartbeat_timestamp_seconds{role="worker"}',
        );
      await expect.poll(at).toBeGreaterThanOrEqual(Math.floor(before / 1000));
      expect((await at()) ?? 0).toBeLessThanOrEqual(Date.now() / 1000);
    } finally {
      beat.stop();
    }
  });

  it("gives at most METRICS_STORE_SERIES stores a label of their own", () => {
    const labels = new StoreLabels(2);
    expect([labels.of(1), labels.of(2), labels.of(3), labels.of(1), labels.of(null)]).toEqual([
      "1",
      "2",
      "other",
      "1",
      "none",
    ]);
  });

  it("requires METRICS_TOKEN as a bearer token when it is set", async () => {
    pipeline = await startPipeline({ env: { METRICS_TOKEN: "metrics-token-0123456789" } });
    expect((await scrape(pipeline)).status).toBe(401);
    expect(
      (await scrape(pipeline, { authorization: "Bearer wrong-token-0123456789" })).status,
    ).toBe(401);
    const ok = await scrape(pipeline, { authorization: "Bearer metrics-token-0123456789" });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain("connector_sync_jobs_total");
  });

  it("serves a worker process's metrics on METRICS_PORT", async () => {
    const metrics = new ConnectorMetrics({ defaultMetrics: true });
    metrics.sync.jobDone("synced");
    metrics.sync.limiterWait("window");
    const port = await freePort();
    const server = await startMetricsServer(metrics, { port });
    try {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      const text = await response.text();
      expect(sample(text, 'connector_sync_jobs_total{outcome="synced"}')).toBe(1);
      expect(sample(text, 'connector_limiter_waits_total{reason="window"}')).toBe(1);
      expect(text).toContain("connector_process_cpu_seconds_total");
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("refuses a METRICS_PORT that is in use, naming the variable", async () => {
    const metrics = new ConnectorMetrics();
    const port = await freePort();
    const first = await startMetricsServer(metrics, { port });
    try {
      await expect(startMetricsServer(metrics, { port })).rejects.toThrow(
        `METRICS_PORT ${port} cannot be used: EADDRINUSE`,
      );
    } finally {
      await new Promise<void>((resolve) => first.close(() => resolve()));
    }
  });
});
