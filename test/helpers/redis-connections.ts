import { afterAll } from "vitest";
import type { RedisConnection } from "../../src/lib/redis-keys.ts";
import { createRedis } from "../../src/queue/connection.ts";
import { service } from "./services.ts";

/**
 * A test file's connections to the run's Redis ("one Redis") or its three-master Redis Cluster,
 * as the connector's own code opens them; all closed after the file's tests.
 */
export function redisConnections(name: string): (kind: "one Redis" | "cluster") => RedisConnection {
  const connections: RedisConnection[] = [];
  afterAll(() => {
    for (const connection of connections) connection.disconnect();
  });
  return (kind) => {
    const target =
      kind === "cluster"
        ? {
            nodes: service("redisClusterNodes")
              .split(",")
              .map((entry) => {
                const [host, port] = entry.split(":");
                return { host: host as string, port: Number(port) };
              }),
            tls: false,
          }
        : service("redisUrl");
    const connection = createRedis(target, "worker", name);
    connections.push(connection);
    return connection;
  };
}
