import { hostname } from "node:os";
import type { RedisConnection } from "../lib/redis-keys.ts";

/** How often a process says it is alive. */
export const HEARTBEAT_EVERY_MS = 15_000;
/** A process silent for a day is forgotten (its role's newest beat is what the gauge shows). */
const FORGET_AFTER_MS = 24 * 3_600_000;

export const heartbeatKey = (prefix: string) => `${prefix}:heartbeats`;

/**
 * Each process of a role (web, worker) writes the time of its last beat into one sorted set in
 * Redis, so the web process's /metrics shows every role's newest beat even when a worker
 * process serves no metrics of its own (`connector_role_heartbeat_timestamp_seconds`). A worker
 * that died, hangs or cannot reach Redis stops beating, and the alert sees its role age.
 */
export function startHeartbeat(
  redis: RedisConnection,
  prefix: string,
  role: string,
  options: { everyMs?: number; onError?: (error: Error) => void } = {},
): { stop(): void } {
  const key = heartbeatKey(prefix);
  const member = `${role}|${hostname()}:${process.pid}`;
  const beat = async () => {
    const now = Date.now();
    await redis.zadd(key, now, member);
    await redis.zremrangebyscore(key, 0, now - FORGET_AFTER_MS);
  };
  const run = () => beat().catch((error: Error) => options.onError?.(error));
  void run();
  const timer = setInterval(run, options.everyMs ?? HEARTBEAT_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** The newest beat of each role (epoch ms). */
export async function readHeartbeats(
  redis: RedisConnection,
  prefix: string,
): Promise<{ role: string; at: number }[]> {
  const flat = await redis.zrange(heartbeatKey(prefix), "0", "-1", "WITHSCORES");
  const newest = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const role = (flat[i] as string).split("|")[0] as string;
    const at = Number(flat[i + 1]);
    if (at > (newest.get(role) ?? 0)) newest.set(role, at);
  }
  return [...newest].map(([role, at]) => ({ role, at }));
}
