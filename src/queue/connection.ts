import { Redis, type RedisOptions } from "ioredis";

/**
 * Two kinds of Redis connection, because they fail differently on purpose:
 * - `worker`: BullMQ workers and schedulers block and must wait out a Redis restart, so they
 *   retry forever (`maxRetriesPerRequest: null`, as BullMQ requires).
 * - `ingest`: the webhook receiver must answer 503 quickly when Redis is down, so Shopify
 *   retries later, instead of queueing commands in memory and answering 200 for an event that
 *   was never stored (docs/principles.md, principle 6). Callers bound their work with a deadline
 *   (`withDeadline`): nothing here times out a command that Redis never answers.
 * - `pipelined`: like `worker`, with ioredis auto-pipelining: the commands issued in one
 *   event-loop turn leave in one socket write. For the sync jobs' own short commands (limiter
 *   scripts, snapshot reads, token reads), never for BullMQ, whose workers block on their
 *   connection and were seen to misbehave with auto-pipelining (taskforcesh/bullmq#457).
 */
export function createRedis(
  url: string,
  kind: "worker" | "ingest" | "pipelined",
  name?: string,
): Redis {
  const options: RedisOptions =
    kind === "worker" || kind === "pipelined"
      ? {
          maxRetriesPerRequest: null,
          enableReadyCheck: true,
          ...(kind === "pipelined" ? { enableAutoPipelining: true } : {}),
        }
      : {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 2_000,
          // No `commandTimeout`: its timer per command (and the `delete` that clears it) cost
          // about as much CPU as the command. A Redis that holds the port open and answers
          // nothing is bounded by the receiver's one deadline per webhook (INGEST_DEADLINE_MS).
          retryStrategy: (times) => Math.min(times * 200, 2_000),
          // Concurrent webhooks' commands leave in one write per event-loop turn instead of one
          // each: socket writes were the receiver's largest cost after HMAC (BENCHMARKS.md).
          enableAutoPipelining: true,
        };
  if (name) options.connectionName = name;
  const redis = new Redis(url, options);
  // Errors surface through the commands that fail; an unhandled 'error' event would crash.
  redis.on("error", () => {});
  return redis;
}
