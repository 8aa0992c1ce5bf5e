import { Redis } from "ioredis";
import { expect, it } from "vitest";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { monitorRedis } from "./redis-monitor.ts";

// The tests that count commands read Redis's MONITOR log while other test files keep the same
// Redis busy. ioredis's own monitor() failed there: on this test it never resolved, and threw
// "Command queue state error" outside any test for the commands logged meanwhile.
it("reads each command, its arguments unescaped, on a Redis other clients keep busy", async () => {
  const server = await startRedisServer();
  const busy = new Redis(server.url);
  const client = new Redis(server.url);
  let loading = true;
  const load = (async () => {
    while (loading) await Promise.all(Array.from({ length: 50 }, (_, i) => busy.hgetall(`k${i}`)));
  })();
  try {
    for (let i = 0; i < 30; i++) {
      const mark = `mark ${i} "quoted"\n\\ é`;
      const seen: string[] = [];
      const monitor = await monitorRedis(server.url, ({ args, source }) => {
        if (args[0] === "echo" && source !== "lua") seen.push(args[1] as string);
      });
      try {
        await client.echo(mark);
        await expect.poll(() => seen).toContain(mark);
      } finally {
        monitor.stop();
      }
    }
  } finally {
    loading = false;
    await load;
    busy.disconnect();
    client.disconnect();
    await server.stop();
  }
});
