import { afterEach, describe, expect, it } from "vitest";
import { defineScripts, type LuaScript } from "../../src/lib/lua.ts";
import type { RedisConnection } from "../../src/lib/redis-keys.ts";
import { createRedis } from "../../src/queue/connection.ts";
import { service } from "../helpers/services.ts";

/**
 * Scripts defined on an auto-pipelined connection while commands of the same event-loop turn are
 * batched: what a restarted `npm start` met when the provider refused the token it had cached
 * (the token cache defines `forgetToken` on its first refusal, just as the limiter settles the
 * call's slot). ioredis's pending batch lacked the new command, and its replies then crashed the
 * process (redis/ioredis#1931).
 */
const ECHO: LuaScript = { numberOfKeys: 1, lua: "return {KEYS[1], ARGV[1]}" };

let redis: RedisConnection | undefined;
afterEach(async () => {
  await redis?.quit();
  redis = undefined;
});

describe("defineScripts on an auto-pipelined connection", () => {
  it("runs a script defined in the same turn as commands already batched, and their replies", async () => {
    const conn = createRedis(service("redisUrl"), "pipelined");
    redis = conn;
    await conn.ping();
    const key = `lua-late-${process.pid}-${Date.now()}`;
    // A command batched first, then the script defined and called in the same turn.
    const before = conn.set(key, "1");
    defineScripts(conn, { echoLate: ECHO });
    const scripted = conn as unknown as {
      echoLate(key: string, arg: string): Promise<unknown>;
    };
    const late = scripted.echoLate(key, "hello");
    const after = conn.get(key);
    await expect(Promise.all([before, late, after])).resolves.toEqual(["OK", [key, "hello"], "1"]);
    await conn.del(key);
  });
});
