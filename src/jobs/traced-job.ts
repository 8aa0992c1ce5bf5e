import { type Attributes, ROOT_CONTEXT, TraceFlags } from "@opentelemetry/api";
import { DelayedError, type Job, WaitingChildrenError } from "bullmq";
import { CONNECTOR, contextFrom, inSpan, MESSAGING, SpanKind, tracingOn } from "../lib/tracing.ts";

/** Thrown by a processor that moved its job on (delayed, waiting): not a failure. */
class Moved {
  constructor(readonly error: unknown) {}
}

export interface TracedJobOptions<D> {
  /** Attributes of the job's span from its data: the shop, the order; never customer data. */
  attributes?: (data: D) => Attributes;
  /**
   * True for a job whose span starts a trace of its own, linked to the span that queued it
   * instead of its child (the sync jobs of a backfill or resync: one trace of thousands of
   * jobs helps nobody find one order).
   */
  linkOnly?: (data: D) => boolean;
  /** Runs after the job with its trace ID (the sync worker records it on the order). */
  done?: (job: Job<D>, traceId: string) => Promise<void>;
}

/**
 * A worker's processor with a consumer span around each job (OpenTelemetry's messaging
 * conventions: `process <queue>`), the child of the span that queued it when the job's data
 * carries its context (`trace`, src/lib/tracing.ts; only linked to it with `linkOnly`), a trace of
 * its own otherwise. A job moved
 * back to the delayed set is not a failure. Off, the processor itself runs.
 */
export function tracedJob<D, R, A extends unknown[]>(
  processor: (job: Job<D>, ...rest: A) => Promise<R>,
  options: TracedJobOptions<D> = {},
): (job: Job<D>, ...rest: A) => Promise<R> {
  return async (job, ...rest) => {
    if (!tracingOn()) return processor(job, ...rest);
    const data = job.data as { trace?: unknown; shop?: unknown } | undefined;
    const result = await inSpan(
      `process ${job.queueName}`,
      {
        kind: SpanKind.CONSUMER,
        ...(options.linkOnly?.(job.data)
          ? { parent: ROOT_CONTEXT, links: [contextFrom(data?.trace)] }
          : { parent: contextFrom(data?.trace) }),
        attributes: {
          [MESSAGING.system]: "bullmq",
          [MESSAGING.operationType]: "process",
          [MESSAGING.operationName]: "process",
          [MESSAGING.destination]: job.queueName,
          ...(job.id ? { [MESSAGING.messageId]: job.id } : {}),
          "connector.job.attempt": job.attemptsMade + 1,
          ...(typeof data?.shop === "string" ? { [CONNECTOR.shop]: data.shop } : {}),
          ...options.attributes?.(job.data),
        },
      },
      async (span) => {
        try {
          return await processor(job, ...rest);
        } catch (error) {
          if (error instanceof DelayedError || error instanceof WaitingChildrenError) {
            span.setAttribute(CONNECTOR.outcome, "delayed");
            return new Moved(error);
          }
          throw error;
        } finally {
          // Only a sampled trace reaches the collector: an unsampled one's ID would lead nowhere.
          const ids = span.spanContext();
          if (options.done && (ids.traceFlags & TraceFlags.SAMPLED) !== 0) {
            await options.done(job, ids.traceId).catch(() => {});
          }
        }
      },
    );
    if (result instanceof Moved) throw result.error;
    return result;
  };
}
