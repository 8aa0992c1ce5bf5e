/**
 * `--otel` for bench:ingest and bench:worker: a local OTLP/HTTP sink the measured processes
 * export their traces to (OTEL_EXPORTER_OTLP_ENDPOINT is set for them), so a run measures the
 * connector with traces on; without the flag no endpoint is set and traces are off. The sink
 * counts the spans it gets and drops them.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface OtelSink {
  endpoint: string;
  /** Spans received so far. */
  spans(): number;
  close(): Promise<void>;
}

export async function startOtelSink(): Promise<OtelSink> {
  let spans = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
        }
      } catch {
        // Not JSON: still answered, as a collector would refuse it without stopping the run.
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * With `--otel` on the command line: starts the sink and points the processes this bench
 * starts (they inherit process.env) at it; without it, makes sure no endpoint leaks in from
 * the shell, so "off" is off. Returns the sink, or null.
 */
export async function otelFromArgs(on: boolean): Promise<OtelSink | null> {
  for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]) {
    delete process.env[name];
  }
  if (!on) {
    console.log("traces: off (no OTLP endpoint; --otel turns them on)");
    return null;
  }
  const sink = await startOtelSink();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = sink.endpoint;
  process.env.OTEL_SERVICE_NAME ??= "connector-bench";
  // Sent every second, so a short run's spans reach the sink before its processes stop.
  process.env.OTEL_BSP_SCHEDULE_DELAY ??= "1000";
  console.log(`traces: on, exported over OTLP/HTTP to a local sink at ${sink.endpoint}`);
  return sink;
}
