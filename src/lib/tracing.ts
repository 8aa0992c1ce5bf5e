import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { invalidEnvironment } from "../config/env.ts";

/**
 * OpenTelemetry traces (docs/configuration.md, "Traces"). Off unless the standard OTEL_*
 * variables name an OTLP endpoint: then `startTracing` starts the SDK (loaded only then) and
 * every helper below records spans. Off, the helpers call their function and nothing else: no
 * SDK is loaded, no span object is made, no context is carried, nothing is added to a log line.
 */

const TRACER_NAME = "shopify-protection-connector";
/** The service name when OTEL_SERVICE_NAME is unset. */
export const DEFAULT_SERVICE_NAME = "shopify-protection-connector";

let sdk: { shutdown(): Promise<void>; forceFlush(): Promise<void> } | null = null;

/** True once `startTracing` started the SDK in this process. */
export function tracingOn(): boolean {
  return sdk !== null;
}

/** What the OTEL_* variables ask for, checked. */
export interface TracingSettings {
  /** The endpoint variable's value, or null for OTLP's default (localhost:4318, not in production). */
  endpoint: string | null;
  /** Where spans are sent: the traces endpoint, or the base endpoint's /v1/traces. */
  url: string | null;
  /** OTEL_TRACES_SAMPLER and its argument: which traces are kept (the SDK's default: all). */
  sampler: { name: SamplerName; ratio: number };
  batch: {
    scheduledDelayMillis?: number;
    maxExportBatchSize?: number;
    maxQueueSize?: number;
    exportTimeoutMillis?: number;
  };
}

const SUPPORTED_PROTOCOL = "http/json";

/** The OTEL_TRACES_SAMPLER values of the specification that the connector takes. */
const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;
type SamplerName = (typeof SAMPLERS)[number];

function samplerSettings(value: (name: string) => string | undefined): TracingSettings["sampler"] {
  const name = (value("OTEL_TRACES_SAMPLER")?.toLowerCase() ??
    "parentbased_always_on") as SamplerName;
  if (!SAMPLERS.includes(name)) {
    throw invalidEnvironment([
      `OTEL_TRACES_SAMPLER: ${name} is not supported; use one of ${SAMPLERS.join(", ")}`,
    ]);
  }
  const raw = value("OTEL_TRACES_SAMPLER_ARG");
  if (raw === undefined || !name.endsWith("traceidratio")) return { name, ratio: 1 };
  const ratio = Number(raw);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw invalidEnvironment([
      "OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1 (the share of traces kept, e.g. 0.1)",
    ]);
  }
  return { name, ratio };
}

/**
 * Reads the standard variables. Null (tracing off) when OTEL_SDK_DISABLED=true,
 * OTEL_TRACES_EXPORTER=none, or when no OTLP endpoint is set and OTEL_TRACES_EXPORTER is not
 * `otlp`. A ConfigError names the variable and the fix for anything else the connector cannot do,
 * and for `otlp` without an endpoint in production (no development default there).
 */
export function tracingSettings(
  env: Record<string, string | undefined>,
  production: boolean,
): TracingSettings | null {
  const value = (name: string) => {
    const v = env[name]?.trim();
    return v ? v : undefined;
  };
  if (value("OTEL_SDK_DISABLED")?.toLowerCase() === "true") return null;
  const exporters = (value("OTEL_TRACES_EXPORTER") ?? "")
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== "");
  const unsupported = exporters.filter((e) => e !== "otlp" && e !== "none");
  if (unsupported.length > 0) {
    throw invalidEnvironment([
      `OTEL_TRACES_EXPORTER: ${unsupported.join(",")} is not supported; use otlp (or none)`,
    ]);
  }
  if (exporters.includes("none")) return null;
  const endpointName = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    : value("OTEL_EXPORTER_OTLP_ENDPOINT")
      ? "OTEL_EXPORTER_OTLP_ENDPOINT"
      : null;
  if (!endpointName && !exporters.includes("otlp")) return null;
  if (!endpointName && production) {
    throw invalidEnvironment([
      "OTEL_EXPORTER_OTLP_ENDPOINT: required with OTEL_TRACES_EXPORTER=otlp in production (there is no default collector); set it to your collector's OTLP/HTTP address, e.g. http://otel-collector:4318",
    ]);
  }
  const endpoint = endpointName ? (value(endpointName) as string) : null;
  if (endpoint !== null && endpointName) {
    let url: URL | null = null;
    try {
      url = new URL(endpoint);
    } catch {}
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw invalidEnvironment([
        `${endpointName}: must be an http:// or https:// URL (the collector's OTLP/HTTP address, e.g. http://otel-collector:4318)`,
      ]);
    }
  }
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
    const protocol = value(name);
    if (protocol !== undefined && protocol !== SUPPORTED_PROTOCOL) {
      throw invalidEnvironment([
        `${name}: ${protocol} is not supported; the connector exports OTLP over HTTP as JSON: set ${SUPPORTED_PROTOCOL} (a collector takes it on its OTLP/HTTP port, 4318)`,
      ]);
    }
    if (protocol !== undefined) break;
  }
  const batch: TracingSettings["batch"] = {};
  const numbers = [
    ["OTEL_BSP_SCHEDULE_DELAY", "scheduledDelayMillis"],
    ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "maxExportBatchSize"],
    ["OTEL_BSP_MAX_QUEUE_SIZE", "maxQueueSize"],
    ["OTEL_BSP_EXPORT_TIMEOUT", "exportTimeoutMillis"],
  ] as const;
  for (const [name, key] of numbers) {
    const raw = value(name);
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) {
      throw invalidEnvironment([`${name}: must be a positive whole number`]);
    }
    batch[key] = n;
  }
  const url =
    endpoint === null
      ? null
      : endpointName === "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        ? endpoint
        : `${endpoint.replace(/\/+$/, "")}/v1/traces`;
  return { endpoint, url, sampler: samplerSettings(value), batch };
}

/**
 * Starts the SDK when the variables ask for it: W3C trace context, async-local context, a batch
 * processor exporting over OTLP/HTTP. Returns what flushes and stops it, or null when off.
 */
export async function startTracing(
  env: Record<string, string | undefined>,
  options: { production: boolean },
): Promise<{ shutdown(): Promise<void>; endpoint: string } | null> {
  const settings = tracingSettings(env, options.production);
  if (!settings || sdk) return null;
  const [traceSdk, { OTLPTraceExporter }, resources, core, hooks] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/core"),
    import("@opentelemetry/context-async-hooks"),
  ]);
  const { TracerProvider, BatchSpanProcessor } = traceSdk;
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, over the connector's own name.
  const resource = resources
    .resourceFromAttributes({ "service.name": DEFAULT_SERVICE_NAME })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The URL from the variables checked above (OTLP's rule: the base endpoint gets /v1/traces);
  // the exporter reads the headers, timeout and compression variables itself.
  const exporter = new OTLPTraceExporter(settings.url === null ? {} : { url: settings.url });
  const provider = new TracerProvider({
    resource,
    sampler: sampler(settings.sampler, traceSdk),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...settings.batch })],
  });
  context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  sdk = provider;
  return {
    // Where spans go, for the start-up line: the origin only (no credentials, no path).
    endpoint: new URL(settings.url ?? "http://localhost:4318").origin,
    async shutdown() {
      try {
        await provider.shutdown();
      } finally {
        sdk = null;
        // The API's globals can be set again (a process starts the SDK at most once; tests more).
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}

/** The sampler OTEL_TRACES_SAMPLER names, as the specification defines each. */
function sampler(
  settings: TracingSettings["sampler"],
  sdkTrace: typeof import("@opentelemetry/sdk-trace"),
): import("@opentelemetry/sdk-trace").Sampler {
  const { AlwaysOnSampler, AlwaysOffSampler, TraceIdRatioBasedSampler, ParentBasedSampler } =
    sdkTrace;
  const root = settings.name.endsWith("always_off")
    ? new AlwaysOffSampler()
    : settings.name.endsWith("traceidratio")
      ? new TraceIdRatioBasedSampler(settings.ratio)
      : new AlwaysOnSampler();
  return settings.name.startsWith("parentbased_") ? new ParentBasedSampler({ root }) : root;
}

/** Sends what was recorded so far (tests and a graceful stop). */
export async function flushTraces(): Promise<void> {
  await sdk?.forceFlush();
}

const NOOP_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent, when not the active context (a job's carried context). */
  parent?: Context;
  /** Spans this one follows from without being their child (a bulk job's producer). */
  links?: Context[];
}

/** The span links of `options.links`: the span context each holds, when valid. */
function linksOf(options: SpanOptions): { links: Link[] } | Record<string, never> {
  if (!options.links) return {};
  const links: Link[] = [];
  for (const c of options.links) {
    const ids = trace.getSpanContext(c);
    if (ids && trace.isSpanContextValid(ids)) links.push({ context: ids });
  }
  return links.length > 0 ? { links } : {};
}

/**
 * Runs `fn` inside a new span made active for it: ended when `fn` settles, its status an error
 * (with the error's class as `error.type`, never its message: it may quote a payload) when `fn`
 * throws. Off, `fn` runs with a span that records nothing.
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (sdk === null) return fn(NOOP_SPAN);
  const tracer = trace.getTracer(TRACER_NAME);
  const parent = options.parent ?? context.active();
  return tracer.startActiveSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...linksOf(options),
    },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        failSpan(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Marks a span failed: the error's class only (a message may quote customer data). */
export function failSpan(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  markFailed(
    span,
    error instanceof Error ? error.constructor.name || error.name || "Error" : typeof error,
  );
}

/** Marks a span failed with an `error.type` (an error class, an HTTP status). */
export function markFailed(span: Span, type: string): void {
  if (!span.isRecording()) return;
  span.setAttribute("error.type", type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** The trace context carried with a job: W3C `traceparent` (and `tracestate`). */
export type TraceCarrier = Record<string, string>;

/**
 * The active span's context as a carrier to put in a job's data (as bullmq-otel carries it in
 * the job), or undefined when off or outside a span: the job's data is then what it was.
 */
export function traceCarrier(): TraceCarrier | undefined {
  if (sdk === null) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** The context a carrier holds, to parent a consumer's span; the empty root without one. */
export function contextFrom(carrier: unknown): Context {
  if (sdk === null || carrier === null || typeof carrier !== "object") return ROOT_CONTEXT;
  const fields: TraceCarrier = {};
  for (const key of ["traceparent", "tracestate"]) {
    const v = (carrier as Record<string, unknown>)[key];
    if (typeof v === "string") fields[key] = v;
  }
  return propagation.extract(ROOT_CONTEXT, fields);
}

/**
 * The active span's IDs for a log line (the logger's mixin), or none when off or outside one. A
 * new object each time: pino merges the line's own fields into it.
 */
export function traceFields(): { trace_id?: string; span_id?: string } {
  if (sdk === null) return {};
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const ids = span.spanContext();
  if (!trace.isSpanContextValid(ids)) return {};
  return { trace_id: ids.traceId, span_id: ids.spanId };
}

/** The active trace's ID, or null (off, or no span). */
export function activeTraceId(): string | null {
  return traceFields().trace_id ?? null;
}

export { SpanKind };

/** Semantic-convention attribute names used here that are still "incubating" upstream. */
export const MESSAGING = {
  system: "messaging.system",
  operationType: "messaging.operation.type",
  operationName: "messaging.operation.name",
  destination: "messaging.destination.name",
  messageId: "messaging.message.id",
} as const;

/** The connector's own attributes: the shop and the webhook topic (never customer data). */
export const CONNECTOR = {
  shop: "connector.shop",
  topic: "connector.topic",
  orderId: "connector.order_id",
  trigger: "connector.trigger",
  outcome: "connector.outcome",
} as const;

/** Adds attributes to the active span (the request's, the job's); nothing when off. */
export function annotate(attributes: Attributes): void {
  if (sdk === null) return;
  trace.getSpan(context.active())?.setAttributes(attributes);
}

/** `inSpan` for synchronous work (a signature check). */
export function inSpanSync<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T {
  if (sdk === null) return fn(NOOP_SPAN);
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
    },
    options.parent ?? context.active(),
    (span) => {
      try {
        return fn(span);
      } catch (error) {
        failSpan(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * A job's data with the active trace context in `trace` (the queue hop: the consumer's span is
 * the child of the producer's), or the data itself when off, outside a span, or already carrying
 * one (a follow-up job keeps its first cause).
 */
export function withTraceContext<T extends { trace?: TraceCarrier }>(data: T): T {
  if (sdk === null || data.trace) return data;
  const carrier = traceCarrier();
  return carrier ? { ...data, trace: carrier } : data;
}

/**
 * A span started now and ended by the caller, not made active (the limiter's wait, which has no
 * children); off, one that records nothing.
 */
export function startSpan(name: string, options: SpanOptions = {}): Span {
  if (sdk === null) return NOOP_SPAN;
  return trace.getTracer(TRACER_NAME).startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
    },
    options.parent ?? context.active(),
  );
}

/**
 * The attributes of an HTTP client span for `url` (OpenTelemetry's HTTP client conventions):
 * the URL without its query string (it could name what a caller looked up).
 */
export function httpClientAttributes(method: string, url: string): Attributes {
  const parsed = new URL(url);
  const port = parsed.port
    ? Number(parsed.port)
    : parsed.protocol === "https:"
      ? 443
      : parsed.protocol === "http:"
        ? 80
        : undefined;
  return {
    "http.request.method": method,
    "server.address": parsed.hostname,
    ...(port !== undefined ? { "server.port": port } : {}),
    "url.full": `${parsed.origin}${parsed.pathname}`,
  };
}
