import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import type { RedisClusterTarget } from "../config/env.ts";
import { isClusterTarget, type RedisConnection, type RedisTarget } from "../lib/redis-keys.ts";

export type { RedisTarget } from "../lib/redis-keys.ts";

export type ConnectionKind = "worker" | "ingest" | "pipelined";

/**
 * Three kinds of Redis connection, because they fail differently on purpose:
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
 * On a Redis Cluster the same three kinds are ioredis `Cluster` clients with the same options
 * per node, without auto-pipelining (below); an ingest client also refuses to queue while it
 * looks up the cluster's slots.
 */
export function createRedis(
  target: RedisTarget,
  kind: ConnectionKind,
  name?: string,
): RedisConnection {
  const options = connectionOptions(kind);
  if (name) options.connectionName = name;
  const redis = isClusterTarget(target)
    ? new Cluster(target.nodes, clusterOptions(target, kind, options))
    : new Redis(target, options);
  // Errors surface through the commands that fail; an unhandled 'error' event would crash.
  redis.on("error", () => {});
  return redis;
}

function connectionOptions(kind: ConnectionKind): RedisOptions {
  if (kind === "worker" || kind === "pipelined") {
    return {
      maxRetriesPerRequest: null,
      enableReadyCheck: true,
      ...(kind === "pipelined" ? { enableAutoPipelining: true } : {}),
    };
  }
  return {
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
}

function clusterOptions(
  target: RedisClusterTarget,
  kind: ConnectionKind,
  node: RedisOptions,
): ClusterOptions {
  const { enableAutoPipelining: _, enableOfflineQueue, retryStrategy, ...perNode } = node;
  return {
    redisOptions: {
      ...perNode,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    },
    // No auto-pipelining on a cluster: ioredis groups an EVALSHA by its first argument (the
    // script's SHA) instead of its first key, so scripts of different slots end up in one
    // pipeline and fail with "All keys in the pipeline should belong to the same slots
    // allocation group" (redis/ioredis#2109). Every command goes out on its own.
    ...(enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
    enableReadyCheck: true,
    // Reconnect to the cluster as a whole with the same pauses as one server.
    clusterRetryStrategy: (times) => Math.min(times * 200, 2_000),
    // A failover moves slots: follow MOVED/ASK and refresh the slot map instead of failing.
    maxRedirections: 16,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    slotsRefreshTimeout: kind === "ingest" ? 2_000 : 5_000,
  };
}
