import { Redis, type RedisOptions } from "ioredis";

/**
 * Two kinds of Redis connection, because they fail differently on purpose:
 * - `worker`: BullMQ workers and schedulers block and must wait out a Redis restart, so they
 *   retry forever (`maxRetriesPerRequest: null`, as BullMQ requires).
 * - `ingest`: the webhook receiver must answer 503 quickly when Redis is down, so Shopify
 *   retries later, instead of queueing commands in memory and answering 200 for an event that
 *   was never stored (DESIGN.md principle 6).
 */
export function createRedis(url: string, kind: "worker" | "ingest", name?: string): Redis {
  const options: RedisOptions =
    kind === "worker"
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : {
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          connectTimeout: 2_000,
          commandTimeout: 2_000,
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
