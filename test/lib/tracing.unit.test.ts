import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { DelayedError, type Job } from "bullmq";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/env.ts";
import { tracedJob } from "../../src/jobs/traced-job.ts";
import { createLogger } from "../../src/lib/logger.ts";
import {
  contextFrom,
  flushTraces,
  inSpan,
  SpanKind,
  startTracing,
  traceFields,
  tracingOn,
  tracingSettings,
  withTraceContext,
} from "../../src/lib/tracing.ts";

/**
 * The context carrier of the queue hop (src/lib/tracing.ts, src/jobs/traced-job.ts), the
 * variables that turn traces on, and the log lines' trace fields. Spans are read back from an
 * OTLP/HTTP receiver in this process, as a collector would get them.
 */

interface Exported {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  links?: { traceId: string; spanId: string }[];
}

const exported: Exported[] = [];
let receiver: Server;
let endpoint: string;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: { scopeSpans: { spans: Exported[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        for (const ss of rs.scopeSpans) exported.push(...ss.spans);
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
  exported.length = 0;
});

async function on(more: Record<string, string> = {}) {
  const tracing = await startTracing(
    { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "50", ...more },
    { production: true },
  );
  if (!tracing) throw new Error("tracing did not start");
  stop = () => tracing.shutdown();
}

/** A BullMQ job as a worker hands it over (only what the traced processor reads). */
const job = <D>(data: D) =>
  ({ data, queueName: "sync", id: "1", attemptsMade: 0 }) as unknown as Job<D>;

describe("the OTEL_* variables", () => {
  it("leave tracing off when no OTLP endpoint is named", () => {
    expect(tracingSettings({}, true)).toBeNull();
    expect(tracingSettings({ OTEL_SERVICE_NAME: "x" }, true)).toBeNull();
    expect(
      tracingSettings(
        { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: "none" },
        true,
      ),
    ).toBeNull();
    expect(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: "true" }, true),
    ).toBeNull();
  });

  it("turn it on with either endpoint variable", () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: `${endpoint}/` }, true)).toMatchObject({
      url: `${endpoint}/v1/traces`,
    });
    expect(
      tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/traces` }, true),
    ).toMatchObject({ url: `${endpoint}/traces` });
  });

  it("refuse otlp without an endpoint in production, and what the exporter cannot do", () => {
    expect(() => tracingSettings({ OTEL_TRACES_EXPORTER: "otlp" }, true)).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT: required with OTEL_TRACES_EXPORTER=otlp in production/,
    );
    // Outside production OTLP's own default (localhost:4318) stands.
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: "otlp" }, false)).toMatchObject({
      endpoint: null,
    });
    const refused = [
      [{ OTEL_TRACES_EXPORTER: "zipkin" }, /OTEL_TRACES_EXPORTER: zipkin is not supported/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, /OTEL_EXPORTER_OTLP_ENDPOINT: must be/],
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
        /OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported/,
      ],
      [
        { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: "soon" },
        /OTEL_BSP_SCHEDULE_DELAY: must be a positive whole number/,
      ],
    ] as const;
    for (const [env, message] of refused) {
      expect(() => tracingSettings(env, false)).toThrow(ConfigError);
      expect(() => tracingSettings(env, false)).toThrow(message);
    }
  });
});

describe("sampling (OTEL_TRACES_SAMPLER)", () => {
  it("takes the specification's samplers and refuses others and a ratio out of range", () => {
    const at = (more: Record<string, string>) =>
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, ...more }, true)?.sampler;
    expect(at({})).toEqual({ name: "parentbased_always_on", ratio: 1 });
    expect(
      at({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }),
    ).toEqual({ name: "parentbased_traceidratio", ratio: 0.1 });
    expect(() => at({ OTEL_TRACES_SAMPLER: "jaeger_remote" })).toThrow(
      /OTEL_TRACES_SAMPLER: jaeger_remote is not supported; use one of always_on/,
    );
    expect(() =>
      at({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "10%" }),
    ).toThrow(/OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1/);
  });

  it("keeps the share of traces asked for: none at 0, every one at 1", async () => {
    await on({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" });
    for (let i = 0; i < 20; i++) await inSpan(`dropped ${i}`, {}, async () => {});
    await flushTraces();
    expect(exported).toEqual([]);
    await stop?.();
    await on({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1" });
    for (let i = 0; i < 20; i++) await inSpan(`kept ${i}`, {}, async () => {});
    await flushTraces();
    expect(exported.map((span) => span.name).sort()).toHaveLength(20);
  });

  it("records a job's trace ID on the order only when the trace is kept", async () => {
    const recorded: string[] = [];
    const processor = tracedJob(async () => "done", {
      done: async (_job, traceId) => {
        recorded.push(traceId);
      },
    });
    await on({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" });
    await processor(job({ shop: "a.myshopify.com" }));
    expect(recorded).toEqual([]);
    await stop?.();
    await on();
    await processor(job({ shop: "a.myshopify.com" }));
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("off", () => {
  it("adds nothing: the job's data is the same object, no span, no log fields", async () => {
    expect(tracingOn()).toBe(false);
    const data: { shop: string; orderId: string; trace?: Record<string, string> } = {
      shop: "a.myshopify.com",
      orderId: "1",
    };
    const seen = await inSpan("producer", { kind: SpanKind.PRODUCER }, async (span) => {
      expect(span.isRecording()).toBe(false);
      return withTraceContext(data);
    });
    expect(seen).toBe(data);
    expect(traceFields()).toEqual({});
    expect(await tracedJob(async (j: Job<typeof data>) => j.data.orderId)(job(data))).toBe("1");
  });
});

describe("the queue hop's carrier", () => {
  it("carries the producer's context in the job data; the consumer's span is its child", async () => {
    await on();
    const data = await inSpan("send sync", { kind: SpanKind.PRODUCER }, async () =>
      withTraceContext<{ shop: string; trace?: Record<string, string> }>({
        shop: "a.myshopify.com",
      }),
    );
    expect(data.trace?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    // Through Redis the data is JSON.
    const stored = JSON.parse(JSON.stringify(data)) as typeof data;
    await tracedJob(async () => "done")(job(stored));
    await flushTraces();
    const producer = exported.find((s) => s.name === "send sync");
    const consumer = exported.find((s) => s.name === "process sync");
    expect(producer).toBeDefined();
    expect(consumer).toMatchObject({
      traceId: producer?.traceId,
      parentSpanId: producer?.spanId,
      kind: 5,
    });
    expect(data.trace?.traceparent).toBe(`00-${producer?.traceId}-${producer?.spanId}-01`);
  });

  it("keeps a job's first cause, starts a trace of its own without one, and ignores junk", async () => {
    await on();
    const first = { trace: { traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` } };
    const again = await inSpan("later", {}, async () => withTraceContext(first));
    expect(again).toBe(first);
    await tracedJob(async () => "done")(job({ shop: "a.myshopify.com" }));
    await tracedJob(async () => "done")(job({ trace: { traceparent: "not a context" } }));
    expect(contextFrom("nonsense")).toBeDefined();
    await flushTraces();
    const roots = exported.filter((s) => s.name === "process sync");
    expect(roots).toHaveLength(2);
    for (const root of roots) expect(root.parentSpanId ?? "").toBe("");
  });

  it("only links a bulk job to its producer: a trace of its own per job", async () => {
    await on();
    const data = await inSpan("backfill", {}, async () =>
      withTraceContext<{ priority: string; trace?: Record<string, string> }>({ priority: "bulk" }),
    );
    await tracedJob(async (_j: Job<typeof data>) => "done", {
      linkOnly: (d) => d.priority === "bulk",
    })(job(data));
    await flushTraces();
    const producer = exported.find((s) => s.name === "backfill");
    const consumer = exported.find((s) => s.name === "process sync");
    expect(consumer?.parentSpanId ?? "").toBe("");
    expect(consumer?.traceId).not.toBe(producer?.traceId);
    expect(consumer?.links).toEqual([
      expect.objectContaining({ traceId: producer?.traceId, spanId: producer?.spanId }),
    ]);
  });

  it("does not count a job moved back to the delayed set as a failure", async () => {
    await on();
    const moved = tracedJob(async () => {
      throw new DelayedError();
    });
    await expect(moved(job({}))).rejects.toBeInstanceOf(DelayedError);
    const failing = tracedJob(async () => {
      throw new TypeError("boom");
    });
    await expect(failing(job({}))).rejects.toBeInstanceOf(TypeError);
    await flushTraces();
    const [delayed, failed] = exported.filter((s) => s.name === "process sync");
    expect(delayed?.status?.code ?? 0).toBe(0);
    expect(failed?.status?.code).toBe(2);
  });
});

describe("log lines", () => {
  it("carry trace_id and span_id inside a span, and nothing outside one", async () => {
    await on();
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger(
      "info",
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    let ids: { traceId: string; spanId: string } | undefined;
    await inSpan("work", {}, async (span) => {
      ids = span.spanContext();
      logger.info({ variables: ["X"] }, "inside");
    });
    logger.info("outside");
    expect(lines[0]).toMatchObject({
      msg: "inside",
      variables: ["X"],
      trace_id: ids?.traceId,
      span_id: ids?.spanId,
    });
    expect(lines[1]).not.toHaveProperty("trace_id");
    expect(lines[1]).not.toHaveProperty("span_id");
  });
});
