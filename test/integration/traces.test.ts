import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { collectOutput } from "../helpers/child-output.ts";
import { cliEntry, connectorEntry } from "../helpers/cli.ts";
import { type Pipeline, SHOPIFY_SECRET, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { freePortPair } from "../helpers/ports.ts";
import { service } from "../helpers/services.ts";
import { standInOrder } from "../helpers/standin-orders.ts";

/**
 * One trace per Shopify delivery, across a real web process and a real worker process: both
 * export over OTLP/HTTP to a receiver in this test. One signed orders/create → one trace holding
 * the receiver's server span (verify and ingest its children), the producer span of the queue
 * hop, the worker's consumer span (its parent the producer span, in the other process), the
 * limiter's wait and the provider calls; no customer data in any attribute; the worker's log
 * lines inside it carry its IDs; `connector orders show` prints its trace ID. Then an
 * orders/edited diff: the worker's Admin API read is a client span of that delivery's trace.
 */

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: { key: string; value: OtlpValue }[];
}
interface Collected extends OtlpSpan {
  service: string;
}

// OTLP's SpanKind numbers.
const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

const received: Collected[] = [];
let receiver: Server;
let pipeline: Pipeline;
const children: ChildProcess[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/v1/traces") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: OtlpValue }[] };
            scopeSpans: { spans: OtlpSpan[] }[];
          }[];
        };
        for (const rs of body.resourceSpans) {
          const name = rs.resource.attributes.find((a) => a.key === "service.name");
          for (const ss of rs.scopeSpans) {
            for (const span of ss.spans) {
              received.push({ ...span, service: name?.value.stringValue ?? "" });
            }
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  // The fixtures: the shop registered against the sandbox, its SQLite file and Redis prefix.
  pipeline = await startPipeline({ workers: 0 });
});

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null) continue;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
  await pipeline?.close();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

function processEnv(service_: string, extra: Record<string, string>): Record<string, string> {
  const { port } = receiver.address() as AddressInfo;
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    REDIS_URL: service("redisUrl"),
    REDIS_PREFIX: pipeline.ctx.prefix,
    DATABASE_PATH: pipeline.ctx.config.env.DATABASE_PATH,
    SHOPIFY_API_SECRET: SHOPIFY_SECRET,
    SHOPIFY_ADMIN_URL: pipeline.shopify.url,
    PROVIDER_BASE_URL: pipeline.sandbox.url,
    PROVIDER_AUTH_URL: pipeline.sandbox.authUrl,
    PROVIDER_AUDIENCE: pipeline.sandbox.audience,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_SERVICE_NAME: service_,
    OTEL_BSP_SCHEDULE_DELAY: "100",
    LOG_LEVEL: "info",
    ...extra,
  };
}

async function startRole(role: "web" | "worker", extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, connectorEntry("--role", role), {
    cwd: ROOT,
    env: processEnv(`connector-${role}`, extra),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const output = collectOutput(child);
  const deadline = Date.now() + 60_000;
  while (!output.out().includes("connector ready")) {
    if (child.exitCode !== null) throw new Error(`${role} exited: ${output.out()}`);
    if (Date.now() > deadline) throw new Error(`${role} not ready within 60 s: ${output.out()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return output;
}

/** PRINT_TRACE=1: a trace as a tree (names, processes, durations), for a closing note. */
function printTrace(traceId: string): void {
  if (!process.env.PRINT_TRACE) return;
  const spans = received.filter((s) => s.traceId === traceId);
  const ms = (s: Collected) =>
    (Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6).toFixed(2);
  const tree = (parent: string, depth: number): string[] =>
    spans
      .filter((s) => (s.parentSpanId ?? "") === parent)
      .flatMap((s) => [
        `${"  ".repeat(depth)}${s.name} [${s.service}] ${ms(s)} ms`,
        ...tree(s.spanId, depth + 1),
      ]);
  console.log(tree("", 0).join("\n"));
}

const attribute = (span: OtlpSpan, key: string) =>
  span.attributes?.find((a) => a.key === key)?.value;

/** Every string an attribute holds, arrays included. */
function strings(value: OtlpValue | undefined): string[] {
  if (!value) return [];
  if (value.arrayValue) return value.arrayValue.values.flatMap(strings);
  return [String(value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue)];
}

describe("traces across the web and worker processes", () => {
  it("one webhook is one trace: receiver, queue hop, worker and provider call, parents linked", async () => {
    const port = await freePortPair();
    await startRole("web", { PORT: String(port) });
    const worker = await startRole("worker");

    const body = readFileSync(resolve(ROOT, "examples/orders-create.json"), "utf8");
    const signed = signWebhook({
      topic: "orders/create",
      shop: TEST_SHOP,
      body,
      secret: SHOPIFY_SECRET,
    });
    const response = await fetch(`http://127.0.0.1:${port}/webhooks/shopify`, {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ outcome: "queued" });

    // The worker's span ends after the provider call: wait for it to be exported.
    const syncSpan = () =>
      received.find(
        (s) =>
          s.kind === KIND.consumer &&
          strings(attribute(s, "messaging.destination.name"))[0]?.startsWith("sync"),
      );
    await expect.poll(syncSpan, { timeout: 30_000 }).toBeDefined();
    const consumer = syncSpan();
    if (!consumer) throw new Error("no sync consumer span");
    const server = received.find((s) => s.kind === KIND.server);
    if (!server) throw new Error(`no server span among ${received.map((s) => s.name)}`);

    // One trace: the worker's span continues the receiver's.
    expect(consumer.traceId).toBe(server.traceId);
    const inTrace = received.filter((s) => s.traceId === server.traceId);
    const byId = new Map(inTrace.map((s) => [s.spanId, s]));
    const one = (predicate: (s: Collected) => boolean, what: string) => {
      const found = inTrace.filter(predicate);
      if (found.length !== 1) {
        throw new Error(`${found.length} spans of ${what}: ${inTrace.map((s) => s.name)}`);
      }
      return found[0] as Collected;
    };

    printTrace(server.traceId);
    // The receiver (web process): the server span is the trace's root.
    expect(server.service).toBe("connector-web");
    expect(server.name).toBe("POST /webhooks/shopify");
    expect(server.parentSpanId ?? "").toBe("");
    expect(strings(attribute(server, "http.request.method"))).toEqual(["POST"]);
    expect(strings(attribute(server, "http.route"))).toEqual(["/webhooks/shopify"]);
    expect(strings(attribute(server, "http.response.status_code"))).toEqual(["200"]);
    expect(strings(attribute(server, "connector.shop"))).toEqual([TEST_SHOP]);
    expect(strings(attribute(server, "connector.topic"))).toEqual(["orders/create"]);
    const verify = one((s) => s.name === "verify webhook", "verify");
    const ingest = one((s) => s.name === "ingest webhook", "ingest");
    expect(verify.parentSpanId).toBe(server.spanId);
    expect(ingest.parentSpanId).toBe(server.spanId);
    const producer = one((s) => s.kind === KIND.producer, "the producer");
    expect(producer.service).toBe("connector-web");
    expect(producer.parentSpanId).toBe(ingest.spanId);
    expect(strings(attribute(producer, "messaging.operation.type"))).toEqual(["send"]);

    // The queue hop: the worker's span (the other process) is the producer span's child.
    expect(consumer.service).toBe("connector-worker");
    expect(consumer.parentSpanId).toBe(producer.spanId);
    expect(strings(attribute(consumer, "messaging.system"))).toEqual(["bullmq"]);
    expect(strings(attribute(consumer, "messaging.operation.type"))).toEqual(["process"]);
    expect(strings(attribute(consumer, "connector.shop"))).toEqual([TEST_SHOP]);
    expect(strings(attribute(consumer, "connector.topic"))).toEqual(["orders/create"]);

    // Under it: the limiter's wait and the provider's order create, a client span.
    const waits = inTrace.filter((s) => s.name === "limiter wait");
    expect(waits.length).toBeGreaterThan(0);
    for (const w of waits) expect(w.parentSpanId).toBe(consumer.spanId);
    const providerOrigin = new URL(pipeline.sandbox.url);
    const calls = inTrace.filter(
      (s) =>
        s.kind === KIND.client &&
        strings(attribute(s, "server.port")).includes(
          providerOrigin.port || (providerOrigin.protocol === "https:" ? "443" : "80"),
        ),
    );
    const create = calls.find(
      (s) =>
        s.name === "POST" &&
        strings(attribute(s, "url.full")).some((u) => u.endsWith("/orders")) &&
        s.parentSpanId === consumer.spanId,
    );
    if (!create) {
      throw new Error(
        `no provider order create under the worker span: ${calls.map((s) => `${s.name} ${strings(attribute(s, "url.full"))}`)}`,
      );
    }
    expect(strings(attribute(create, "http.response.status_code"))[0]).toMatch(/^2/);
    // Every span of the trace hangs from the root: no parent outside it.
    for (const span of inTrace) {
      if (span !== server) expect(byId.has(span.parentSpanId ?? "")).toBe(true);
    }

    // No customer data in any attribute of any span exported.
    const customer = [
      "grace@example.com",
      "Grace",
      "Hopper",
      "10 Navy Way",
      "Arlington",
      "22201",
      "555-0100",
    ];
    const values = received.flatMap((s) => (s.attributes ?? []).flatMap((a) => strings(a.value)));
    expect(values.length).toBeGreaterThan(0);
    for (const value of values) {
      for (const field of customer) expect(value).not.toContain(field);
    }

    // The worker's log lines written inside the job's span carry its IDs.
    await expect
      .poll(() =>
        worker
          .out()
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as { msg?: string; trace_id?: string; span_id?: string })
          .find((l) => l.msg === "order synced"),
      )
      .toMatchObject({ trace_id: consumer.traceId, span_id: consumer.spanId });

    // `connector orders show` names the trace of the order's last sync.
    const { stdout } = await run(
      process.execPath,
      [...cliEntry(), "orders", "show", "--shop", TEST_SHOP, "--order", "#1001"],
      { cwd: ROOT, env: { ...processEnv("cli", {}), LOG_LEVEL: "silent" }, timeout: 30_000 },
    );
    expect(stdout).toContain(`last sync trace: ${consumer.traceId}`);

    // A Shopify Admin call is a client span of its delivery's trace too: an orders/edited diff
    // makes the worker read the order from the Admin API (the stand-in Shopify).
    const { payload } = standInOrder(42, "2026-11-02T10:00:00Z");
    await pipeline.shopify.upsertOrder(TEST_SHOP, payload, { deliver: false });
    const edit = signWebhook({
      topic: "orders/edited",
      shop: TEST_SHOP,
      body: JSON.stringify({
        order_edit: {
          id: 5001,
          order_id: 42,
          committed_at: "2026-11-02T10:00:00Z",
          created_at: "2026-11-02T09:59:00Z",
          line_items: { additions: [], removals: [] },
        },
      }),
      secret: SHOPIFY_SECRET,
    });
    const edited = await fetch(`http://127.0.0.1:${port}/webhooks/shopify`, {
      method: "POST",
      headers: edit.headers,
      body: edit.body,
    });
    expect(edited.status).toBe(200);
    // (The web process's own Admin calls at start are traces of their own.)
    const editTrace = () =>
      received.find(
        (s) =>
          s.kind === KIND.server && strings(attribute(s, "connector.topic"))[0] === "orders/edited",
      )?.traceId;
    const adminSpan = () =>
      received.find((s) => attribute(s, "graphql.operation.type") && s.traceId === editTrace());
    await expect.poll(adminSpan, { timeout: 30_000 }).toBeDefined();
    const admin = adminSpan() as Collected;
    expect(admin.kind).toBe(KIND.client);
    expect(admin.service).toBe("connector-worker");
    expect(strings(attribute(admin, "server.address"))).toEqual([TEST_SHOP]);
    await expect
      .poll(() => received.find((s) => s.spanId === admin.parentSpanId))
      .toMatchObject({ kind: KIND.consumer, traceId: admin.traceId });
    printTrace(admin.traceId);
    const editServer = received.find((s) => s.traceId === admin.traceId && s.kind === KIND.server);
    expect(editServer?.service).toBe("connector-web");
    expect(strings(attribute(editServer as Collected, "connector.topic"))).toEqual([
      "orders/edited",
    ]);
  }, 120_000);
});
