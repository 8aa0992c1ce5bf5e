import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Result } from "ioredis";
import { defineScripts, loadLua } from "./lua.ts";
import type { RedisConnection } from "./redis-keys.ts";

const LOCK_SCRIPTS = { releaseLock: loadLua(new URL("./lua/", import.meta.url), "release-lock-1") };

declare module "ioredis" {
  interface RedisCommander<Context> {
    releaseLock(lock: string, owner: string): Result<number, Context>;
  }
}

/** Releases a lock taken with `SET lock owner NX PX …`, only if `owner` still holds it. */
export async function releaseLock(
  redis: RedisConnection,
  lock: string,
  owner: string,
): Promise<boolean> {
  defineScripts(redis, LOCK_SCRIPTS);
  return (await redis.releaseLock(lock, owner)) === 1;
}

/**
 * Runs `work` holding a Redis lock (`SET key owner NX PX ttlMs`, released only by its owner), so
 * one holder at a time runs it across processes. The lock is waited for, up to `waitMs`, then
 * `busy()` is thrown. A lock left by a killed process expires after `ttlMs`: a `waitMs` above it
 * outwaits one.
 */
export async function withLock<T>(
  redis: RedisConnection,
  key: string,
  options: { ttlMs: number; waitMs: number; busy: () => Error },
  work: () => Promise<T>,
): Promise<T> {
  const owner = randomUUID();
  const deadline = Date.now() + options.waitMs;
  while ((await redis.set(key, owner, "PX", options.ttlMs, "NX")) !== "OK") {
    if (Date.now() > deadline) throw options.busy();
    await sleep(50);
  }
  try {
    return await work();
  } finally {
    await releaseLock(redis, key, owner).catch(() => false);
  }
}
