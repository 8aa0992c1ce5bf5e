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
