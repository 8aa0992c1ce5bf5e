import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { startRedisServer } from "../../src/lib/redis-server.ts";

describe("startRedisServer", () => {
  it("starts a private server on a free port with noeviction and no persistence, and stops it", async () => {
    const server = await startRedisServer();
    const client = new Redis(server.url);
    try {
      expect(await client.config("GET", "maxmemory-policy")).toEqual([
        "maxmemory-policy",
        "noeviction",
      ]);
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "no"]);
      expect(await client.config("GET", "save")).toEqual(["save", ""]);
    } finally {
      client.disconnect();
      await server.stop();
    }
    expect(server.process.exitCode !== null || server.process.signalCode !== null).toBe(true);
  });
});
