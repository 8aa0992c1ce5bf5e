import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster } from "ioredis";

const run = promisify(execFile);

/** A real Redis Cluster of three masters on loopback, for the cluster tests. */
export interface RedisClusterHandle {
  nodes: { host: string; port: number }[];
  /** A client of the cluster (ioredis `Cluster`), closed by `stop`. */
  connect(): Cluster;
  stop(): Promise<void>;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port whose cluster bus port (port + 10000) is free too, below the ephemeral range. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await isFree(port)) && (await isFree(port + 10_000))) {
      taken.add(port);
      taken.add(port + 10_000);
      return port;
    }
  }
  throw new Error("no free port pair for a Redis Cluster node");
}

/**
 * Starts three `redis-server --cluster-enabled yes` processes and joins them with
 * `redis-cli --cluster create` (no replicas), then waits until the cluster reports `ok`.
 */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const dir = await mkdtemp(join(tmpdir(), "redis-cluster-"));
  const taken = new Set<number>();
  const processes: ChildProcess[] = [];
  const clients: Cluster[] = [];
  const stop = async () => {
    for (const client of clients) client.disconnect();
    for (const child of processes) child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    for (let i = 0; i < 3; i++) ports.push(await clusterPort(taken));
    for (const port of ports) {
      const child = spawn(
        "redis-server",
        [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          `nodes-${port}.conf`,
          "--dir",
          dir,
          "--save",
          "",
          "--appendonly",
          "no",
        ],
        { stdio: "ignore" },
      );
      processes.push(child);
    }
    for (const port of ports) await waitForPing(port);
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    for (const port of ports) await waitForClusterOk(port);
    const nodes = ports.map((port) => ({ host: "127.0.0.1", port }));
    return {
      nodes,
      connect() {
        const client = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null } });
        client.on("error", () => {});
        clients.push(client);
        return client;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function waitForPing(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const { stdout } = await run("redis-cli", ["-p", String(port), "ping"]);
      if (stdout.trim() === "PONG") return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitForClusterOk(port: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { stdout } = await run("redis-cli", ["-p", String(port), "cluster", "info"]);
    if (stdout.includes("cluster_state:ok")) return;
    if (Date.now() > deadline) throw new Error(`the cluster node on ${port} never reported ok`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
