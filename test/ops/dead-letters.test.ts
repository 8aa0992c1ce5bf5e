import { afterEach, describe, expect, it } from "vitest";
import { createDeadLetters } from "../../src/ops/index.ts";
import type { DeadLetterData, FailureCategory } from "../../src/queue/jobs.ts";
import { deadLetterId } from "../../src/queue/order-queues.ts";
import type { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { runCli } from "../helpers/cli.ts";
import { shippedOrder } from "../helpers/orders.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";
import { sourceOrder } from "../helpers/source-order-factory.ts";

const OTHER_SHOP = "other-shop.myshopify.com";

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
});

/** The pipeline with the provider knowing location 77 only, and the shop mapping 4001 → 78. */
async function misconfiguredPipeline() {
  const p = await startPipeline({ sandbox: { fulfillmentLocations: { 1001: [77] } } });
  await p.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 78 } });
  return p;
}

const entryOf = async (p: Pipeline, id: string) =>
  (await p.ctx.queues.deadLetter.getJob(id))?.data as DeadLetterData | undefined;

describe("dead-letter queue", { timeout: 120_000 }, () => {
  it("keeps a provider 400 with the request sent and the response received", async () => {
    pipeline = await misconfiguredPipeline();
    const model = shippedOrder(5_550_001);
    await pipeline.send("orders/create", orderPayload(model));
    await pipeline.drain();

    const entry = await entryOf(pipeline, deadLetterId(TEST_SHOP, "5550001"));
    expect(entry).toMatchObject({
      shop: TEST_SHOP,
      orderId: "5550001",
      topic: "orders/create",
      category: "provider-validation",
      errorClass: "ProviderValidationError",
      attempts: 1,
      fields: [{ path: "fulfillmentLocationId", message: "refused by the provider" }],
      request: {
        method: "POST",
        path: expect.stringMatching(/^\/orders\/\d+\/fulfillments$/),
        body: { sourceFulfillmentId: "5550003", fulfillmentLocationId: 78 },
      },
      response: {
        status: 400,
        requestId: expect.any(String),
        body: { code: "validation_error", fields: ["fulfillmentLocationId"] },
      },
    });
    expect(entry?.reason).toBe(
      `the provider refused the request: ${entry?.request?.path ? `POST ${entry.request.path}` : ""} answered 400: validation_error; fields fulfillmentLocationId`,
    );
    // The provider's own text (which can quote customer data) is neither stored nor shown.
    expect(JSON.stringify(entry)).not.toContain("is not a fulfillment location");
    expect(entry?.firstFailedAt).toBe(entry?.lastFailedAt);
    // The order itself went through; only its fulfillment is missing at the provider.
    expect(pipeline.sandbox.state.orders.find(1001, "5550001")?.fulfillments).toHaveLength(0);
  });

  it("syncs the order with `connector dlq retry` once the location mapping is fixed", async () => {
    pipeline = await misconfiguredPipeline();
    await pipeline.send("orders/create", orderPayload(shippedOrder(5_550_001)));
    await pipeline.drain();
    const id = deadLetterId(TEST_SHOP, "5550001");
    expect(await entryOf(pipeline, id)).toBeDefined();

    await pipeline.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 77 } });
    const retried = await runCli(pipeline.ctx, ["dlq", "retry", id]);
    expect(retried.stderr).toBe("");
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain(`queued ${id}`);
    await pipeline.drain();

    const stored = pipeline.sandbox.state.orders.find(1001, "5550001");
    expect(stored?.fulfillments).toHaveLength(1);
    expect(stored?.fulfillments[0]).toMatchObject({
      sourceFulfillmentId: "5550003",
      fulfillmentLocationId: 77,
    });
    expect(await entryOf(pipeline, id)).toBeUndefined();
    expect((await pipeline.ctx.links.getOrderLinkRow(TEST_SHOP, "5550001"))?.lastResult).toBe(
      "synced",
    );
  });

  it("removes the entry when a later webhook syncs the order after the cause was fixed", async () => {
    pipeline = await misconfiguredPipeline();
    const model = shippedOrder(5_550_021);
    await pipeline.send("orders/create", orderPayload(model));
    await pipeline.drain();
    const id = deadLetterId(TEST_SHOP, "5550021");
    expect(await entryOf(pipeline, id)).toBeDefined();

    await pipeline.ctx.shops.updateSettings(TEST_SHOP, { locationMap: { "4001": 77 } });
    await pipeline.send(
      "orders/updated",
      orderPayload({ ...model, updatedAt: "2026-11-03T10:00:00Z", note: "gift" }),
    );
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.find(1001, "5550021")?.fulfillments).toHaveLength(1);
    expect(await entryOf(pipeline, id)).toBeUndefined();
  });

  it("brings a retried order that fails again back with its history", async () => {
    pipeline = await misconfiguredPipeline();
    await pipeline.send("orders/create", orderPayload(shippedOrder(5_550_001)));
    await pipeline.drain();
    const id = deadLetterId(TEST_SHOP, "5550001");
    const first = await entryOf(pipeline, id);

    // Retried without fixing the cause.
    const outcome = await createDeadLetters(pipeline.ctx).retry(id);
    expect(outcome.result).toBe("queued");
    await pipeline.drain();

    const again = await entryOf(pipeline, id);
    expect(again).toMatchObject({
      topic: "dlq-retry",
      category: "provider-validation",
      attempts: 2,
      retries: 1,
      firstFailedAt: first?.firstFailedAt,
      history: [
        {
          at: first?.lastFailedAt,
          topic: "orders/create",
          category: "provider-validation",
          errorClass: "ProviderValidationError",
          status: 400,
        },
      ],
    });
    expect(Date.parse(again?.lastFailedAt ?? "")).toBeGreaterThanOrEqual(
      Date.parse(first?.lastFailedAt ?? ""),
    );
  });

  it("keeps an entry whose order has no stored state and that Shopify cannot return, saying why", async () => {
    pipeline = await startPipeline({ workers: 0 });
    const id = deadLetterId(TEST_SHOP, "7000001");
    await pipeline.ctx.queues.addDeadLetter(id, deadLetter(TEST_SHOP, "7000001", "exhausted"));

    const outcome = await createDeadLetters(pipeline.ctx).retry(id);
    expect(outcome.result).toBe("skipped");
    expect(outcome.message).toContain("no stored state");
    expect((await entryOf(pipeline, id))?.lastRetry?.result).toContain("no stored state");
    expect(await pipeline.ctx.queues.sync.getJobCounts("prioritized", "waiting")).toEqual({
      prioritized: 0,
      waiting: 0,
    });
  });

  it("refetches an order whose snapshot expired when a Shopify refetch is wired", async () => {
    pipeline = await startPipeline({ workers: 0 });
    const id = deadLetterId(TEST_SHOP, "7000002");
    await pipeline.ctx.queues.addDeadLetter(id, deadLetter(TEST_SHOP, "7000002", "exhausted"));
    const asked: string[] = [];
    pipeline.ctx.refetchOrder = async (shop, orderId) => {
      asked.push(`${shop.shop}/${orderId}`);
      return sourceOrder({
        shop: TEST_SHOP as ShopDomain,
        id: orderId as ShopifyOrderId,
      });
    };
    const outcome = await createDeadLetters(pipeline.ctx).retry(id);
    expect(outcome.result).toBe("queued");
    expect(asked).toEqual([`${TEST_SHOP}/7000002`]);
    expect((await pipeline.ctx.snapshots.get(TEST_SHOP, "7000002"))?.order?.id).toBe("7000002");
  });

  it("refuses to re-queue the orders of a paused shop until it is resumed", async () => {
    pipeline = await startPipeline({ workers: 0 });
    await seed(pipeline, TEST_SHOP, "7000003", "config");
    await pipeline.ctx.shops.setStatus(TEST_SHOP, "paused", "provider rejected the credentials");
    const dlq = createDeadLetters(pipeline.ctx);
    const id = deadLetterId(TEST_SHOP, "7000003");
    const paused = await dlq.retry(id);
    expect(paused).toMatchObject({ result: "skipped" });
    expect(paused.message).toContain("resume the shop first");

    await pipeline.ctx.shops.setStatus(TEST_SHOP, "active");
    expect((await dlq.retry(id)).result).toBe("queued");
  });

  it("retries only the dead letters of shop A with reason provider-validation", async () => {
    pipeline = await startPipeline({ workers: 0 });
    await pipeline.ctx.shops.upsertShop(OTHER_SHOP, { storeId: 1001, storeCurrency: "USD" });
    await seed(pipeline, TEST_SHOP, "8000001", "provider-validation");
    await seed(pipeline, TEST_SHOP, "8000002", "provider-validation");
    await seed(pipeline, TEST_SHOP, "8000003", "config");
    await seed(pipeline, OTHER_SHOP, "8000004", "provider-validation");

    const report = await createDeadLetters(pipeline.ctx).retryMatching({
      shop: TEST_SHOP,
      reason: "provider-validation",
    });
    expect(report).toMatchObject({ matched: 2, retried: 2, skipped: 0, failed: 0 });

    const queued = await pipeline.ctx.queues.sync.getJobs(["prioritized", "waiting"]);
    expect(queued.map((j) => j.data.orderId).sort()).toEqual(["8000001", "8000002"]);
    expect(queued.every((j) => j.data.trigger === "dlq-retry" && j.data.priority === "bulk")).toBe(
      true,
    );
    const left = await createDeadLetters(pipeline.ctx).list();
    expect(left.entries.map((e) => e.id).sort()).toEqual(
      [deadLetterId(OTHER_SHOP, "8000004"), deadLetterId(TEST_SHOP, "8000003")].sort(),
    );
  });

  it("queues each entry once when the same bulk retry runs twice at once, then again", async () => {
    pipeline = await startPipeline({ workers: 0 });
    const ids = ["8100001", "8100002", "8100003", "8100004", "8100005"];
    for (const id of ids) await seed(pipeline, TEST_SHOP, id, "provider-validation");
    const dlq = createDeadLetters(pipeline.ctx);
    const other = createDeadLetters(pipeline.ctx);

    const [a, b] = await Promise.all([
      dlq.retryMatching({ reason: "provider-validation" }),
      other.retryMatching({ reason: "provider-validation" }),
    ]);
    expect(a.retried + b.retried).toBe(ids.length);
    expect(a.failed + b.failed).toBe(0);
    // Whatever one run queued, the other reports as skipped (or never saw).
    expect(a.retried + a.skipped).toBe(a.matched);
    expect(b.retried + b.skipped).toBe(b.matched);

    const again = await dlq.retryMatching({ reason: "provider-validation" });
    expect(again).toMatchObject({ matched: 0, retried: 0 });
    const queued = await pipeline.ctx.queues.sync.getJobs(["prioritized", "waiting"]);
    expect(queued.map((j) => j.data.orderId).sort()).toEqual(ids);
  });

  it("logs a bulk retry as one line when it starts and one with its counts, each entry at debug", async () => {
    const logs = captureLogs("bulk-retry");
    try {
      pipeline = await startPipeline({ workers: 0, logDestination: logs.destination });
      const ids = Array.from({ length: 30 }, (_, i) => String(8_300_001 + i));
      for (const id of ids) await seed(pipeline, TEST_SHOP, id, "exhausted");
      const progress: number[] = [];
      const report = await createDeadLetters(pipeline.ctx).retryMatching(
        { reason: "exhausted" },
        { onProgress: (p) => progress.push(p.done) },
      );
      expect(report).toMatchObject({ matched: 30, retried: 30, skipped: 0, failed: 0 });
      expect(progress.at(-1)).toBe(30);
      const lines = logs
        .read()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => String(l.msg).startsWith("dead letter"));
      expect(lines.filter((l) => l.msg === "dead letter retry")).toHaveLength(30);
      expect(lines.filter((l) => l.level !== "debug")).toEqual([
        expect.objectContaining({
          level: "info",
          msg: "dead letter bulk retry",
          reason: "exhausted",
          matched: 30,
        }),
        expect.objectContaining({
          level: "info",
          msg: "dead letter bulk retry done",
          matched: 30,
          retried: 30,
          skipped: 0,
          failed: 0,
        }),
      ]);
    } finally {
      logs.remove();
    }
  });

  it("keeps every entry it could not re-queue and counts it as skipped", async () => {
    pipeline = await startPipeline({ workers: 0 });
    await seed(pipeline, TEST_SHOP, "8200001", "exhausted");
    // No snapshot for this one: it cannot be reconciled without a refetch.
    await pipeline.ctx.queues.addDeadLetter(
      deadLetterId(TEST_SHOP, "8200002"),
      deadLetter(TEST_SHOP, "8200002", "exhausted"),
    );
    const report = await createDeadLetters(pipeline.ctx).retryMatching({ shop: TEST_SHOP });
    expect(report).toMatchObject({ matched: 2, retried: 1, skipped: 1, failed: 0 });
    expect(report.outcomes.find((o) => o.result === "skipped")?.id).toBe(
      deadLetterId(TEST_SHOP, "8200002"),
    );
    expect(await entryOf(pipeline, deadLetterId(TEST_SHOP, "8200002"))).toBeDefined();
  });

  it("keeps a webhook body that still cannot be used, and discards it on request", async () => {
    pipeline = await startPipeline();
    const response = await pipeline.send(
      "orders/create",
      { id: 9_100_001, line_items: "not a list" },
      { webhookId: "bad-delivery-1" },
    );
    expect(await response.json()).toMatchObject({ outcome: "dead-lettered" });
    const dlq = createDeadLetters(pipeline.ctx);
    const page = await dlq.list({ reason: "payload" });
    expect(page.total).toBe(1);
    const id = page.entries[0]?.id ?? "";
    expect(page.entries[0]).toMatchObject({ kind: "payload", webhookId: "bad-delivery-1" });
    expect((await dlq.get(id))?.rawPayload).toContain("not a list");

    const retried = await dlq.retry(id);
    expect(retried.result).toBe("skipped");
    expect(retried.message).toContain("still cannot be used");
    expect(await dlq.discard(id)).toBe("discarded");
    expect(await dlq.get(id)).toBeNull();
    expect(await dlq.discard(id)).toBe("not-found");
  });

  it("lists, shows and discards from the CLI, filtered by shop and reason", async () => {
    pipeline = await startPipeline({ workers: 0 });
    await pipeline.ctx.shops.upsertShop(OTHER_SHOP, { storeId: 1001, storeCurrency: "USD" });
    await seed(pipeline, TEST_SHOP, "8300001", "provider-validation");
    await seed(pipeline, TEST_SHOP, "8300002", "config");
    await seed(pipeline, OTHER_SHOP, "8300003", "provider-validation");

    const listed = await runCli(pipeline.ctx, [
      "dlq",
      "list",
      "--shop",
      TEST_SHOP,
      "--reason",
      "provider-validation",
      "--json",
    ]);
    expect(listed.code).toBe(0);
    const page = JSON.parse(listed.stdout) as { total: number; entries: { id: string }[] };
    expect(page.total).toBe(1);
    expect(page.entries.map((e) => e.id)).toEqual([deadLetterId(TEST_SHOP, "8300001")]);

    const byText = await runCli(pipeline.ctx, [
      "dlq",
      "list",
      "--reason-includes",
      "config failure",
      "--json",
    ]);
    expect(byText.code).toBe(0);
    expect(
      (JSON.parse(byText.stdout) as { entries: { id: string }[] }).entries.map((e) => e.id),
    ).toEqual([deadLetterId(TEST_SHOP, "8300002")]);
    const blank = await runCli(pipeline.ctx, ["dlq", "list", "--reason-includes", " "]);
    expect(blank.code).toBe(2);
    expect(blank.stderr.trim()).toBe(
      "connector: option '--reason-includes <text>' argument ' ' is invalid: must not be empty; see `connector dlq list --help`",
    );

    const table = await runCli(pipeline.ctx, ["dlq", "list"]);
    expect(table.stdout).toContain("3 of 3 shown");
    // A misspelt category is refused with the known ones, not listed as an empty queue.
    const misspelt = await runCli(pipeline.ctx, ["dlq", "list", "--reason", "provider-valdation"]);
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr.trim()).toBe(
      "connector: option '--reason <category>' argument 'provider-valdation' is invalid: must be one of config, mapping, protected-data, provider-validation, provider-not-found, provider-conflict, link-mismatch, exhausted, payload; see `connector dlq list --help`",
    );
    const missing = await runCli(pipeline.ctx, ["dlq", "show", "nope|1"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no dead-letter entry nope|1");

    const shown = await runCli(pipeline.ctx, ["dlq", "show", deadLetterId(TEST_SHOP, "8300001")]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("request: POST /orders/1/fulfillments");
    expect(shown.stdout).toContain("response: 400");

    const discarded = await runCli(pipeline.ctx, [
      "dlq",
      "discard",
      deadLetterId(OTHER_SHOP, "8300003"),
    ]);
    expect(discarded.code).toBe(0);
    expect((await createDeadLetters(pipeline.ctx).list()).total).toBe(2);
  });

  it("bulk-retries by reason from the CLI and refuses an ID together with --all", async () => {
    pipeline = await startPipeline({ workers: 0 });
    await seed(pipeline, TEST_SHOP, "8400001", "provider-validation");
    await seed(pipeline, TEST_SHOP, "8400002", "config");

    const bulk = await runCli(pipeline.ctx, ["dlq", "retry", "--all", "--reason", "config"]);
    expect(bulk.code).toBe(0);
    expect(bulk.stdout).toContain("matched 1: retried 1, skipped 0, failed 0");
    // How far it is, on stderr (a line every 1,000 entries and at the end, outside a terminal).
    expect(bulk.stderr).toBe("dlq retry: 1 of 1 entries (1 queued, 0 skipped, 0 failed)\n");
    // It names what it retried, not only what it could not.
    expect(bulk.stdout).toMatch(
      new RegExp(`\\n {2}queued ${TEST_SHOP.replaceAll(".", "\\.")}\\|8400002: `),
    );
    const queued = await pipeline.ctx.queues.sync.getJobs(["prioritized", "waiting"]);
    expect(queued.map((j) => j.data.orderId)).toEqual(["8400002"]);

    const dlq = (...args: string[]) => runCli((pipeline as Pipeline).ctx, ["dlq", ...args]);
    const byText = await dlq("retry", "--all", "--reason-includes", "validation failure");
    expect(byText.code).toBe(0);
    expect(byText.stdout).toContain("matched 1: retried 1, skipped 0, failed 0");
    const requeued = await pipeline.ctx.queues.sync.getJobs(["prioritized", "waiting"]);
    expect(requeued.map((j) => j.data.orderId).sort()).toEqual(["8400001", "8400002"]);

    const both = await runCli(pipeline.ctx, ["dlq", "retry", "x|1", "--all"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    const filterWithoutAll = await dlq("retry", "x|1", "--reason-includes", "failure");
    expect(filterWithoutAll.code).toBe(2);
    expect(filterWithoutAll.stderr).toContain("filter a bulk retry: add --all");
  });
});

function deadLetter(shop: string, orderId: string, category: FailureCategory): DeadLetterData {
  const now = new Date().toISOString();
  return {
    shop,
    orderId,
    topic: "orders/updated",
    reason: `a ${category} failure`,
    category,
    errorClass: category === "provider-validation" ? "ProviderValidationError" : "Error",
    request: {
      method: "POST",
      path: "/orders/1/fulfillments",
      body: { fulfillmentLocationId: 78 },
    },
    response: { status: 400, body: { error: { code: "validation_error" } } },
    attempts: 1,
    firstFailedAt: now,
    lastFailedAt: now,
  };
}

/** An entry recorded the way the worker records one, with the order's snapshot stored. */
async function seed(p: Pipeline, shop: string, orderId: string, category: FailureCategory) {
  await p.ctx.snapshots.storeOrder(
    sourceOrder({ shop: shop as ShopDomain, id: orderId as ShopifyOrderId }),
  );
  await p.ctx.queues.addDeadLetter(
    deadLetterId(shop, orderId),
    deadLetter(shop, orderId, category),
  );
}
