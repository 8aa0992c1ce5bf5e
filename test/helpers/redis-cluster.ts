import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster } from "ioredis";
import { ephemeralPorts, isFree } from "../../src/lib/free-port.ts";

const run = promisify(execFile);

/** A real Redis Cluster of three masters on loopback, for the cluster tests. */
export interface RedisClusterHandle {
  nodes: { host: string; port: number }[];
  /** REDIS_CLUSTER_NODES for this cluster. */
  seeds: string;
  /** The ports of the nodes that are masters now (after failovers), from CLUSTER NODES. */
  masters(): Promise<number[]>;
  /** The replica of a master, by port. */
  replicaOf(masterPort: number): Promise<number | undefined>;
  /** kill -9 of one node. */
  kill(port: number): void;
  /** Starts a killed node again on its port, data directory and nodes.conf. */
  restart(port: number): Promise<void>;
  /** A manual failover (CLUSTER FAILOVER on the replica): no acknowledged write is lost. */
  failover(replicaPort: number): Promise<void>;
  /** Waits until every node reports cluster_state:ok. */
  waitOk(): Promise<void>;
  /** A client of the cluster (ioredis `Cluster`), closed by `stop`. */
  connect(): Cluster;
  stop(): Promise<void>;
}

/** Redis's cluster bus listens on the node's port + 10000. */
const BUS_OFFSET = 10_000;

/**
 * A port whose cluster bus port (port + 10000) is free too, both below the kernel's range for
 * outgoing connections (src/lib/free-port.ts): a client socket of any process could otherwise
 * take either between this check and the node's bind. (Both were drawn from 20000–49999, inside
 * Linux's 32768–60999, and a node now and then failed to start beside other files.)
 */
async function clusterPort(taken: Set<number>): Promise<number> {
  const { low } = ephemeralPorts();
  const lowest = 10_000;
  const span = low - BUS_OFFSET - lowest;
  if (span < 1_000) throw new Error(`no room for a cluster port below the range ${low}`);
  for (let tries = 0; tries < 200; tries++) {
    const port = lowest + Math.floor(Math.random() * span);
    if (taken.has(port) || taken.has(port + BUS_OFFSET)) continue;
    if ((await isFree(port)) && (await isFree(port + BUS_OFFSET))) {
      taken.add(port);
      taken.add(port + BUS_OFFSET);
      return port;
    }
  }
  throw new Error("no free port pair for a Redis Cluster node");
}

export interface RedisClusterOptions {
  /** Replicas per master (0: three masters alone). */
  replicas?: number;
  /** AOF with this fsync policy on every node (default: no persistence). */
  appendfsync?: "always" | "everysec";
  /** How long a master may be unreachable before its replica takes over (ms). */
  nodeTimeoutMs?: number;
}

/**
 * Starts `redis-server --cluster-enabled yes` processes (three masters, and `replicas` replicas
 * of each) and joins them with `redis-cli --cluster create`, then waits until the cluster
 * reports `ok`.
 */
export async function startRedisCluster(
  options: RedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const dir = await mkdtemp(join(tmpdir(), "redis-cluster-"));
  const taken = new Set<number>();
  const processes = new Map<number, ChildProcess>();
  const clients: Cluster[] = [];
  const stop = async () => {
    for (const client of clients) client.disconnect();
    for (const child of processes.values()) child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
  };
  const startNode = (port: number) => {
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
        "--cluster-node-timeout",
        String(options.nodeTimeoutMs ?? 2_000),
        "--dir",
        dir,
        "--save",
        "",
        "--maxmemory-policy",
        "noeviction",
        ...(options.appendfsync
          ? [
              "--appendonly",
              "yes",
              "--appendfilename",
              `aof-${port}.aof`,
              "--appenddirname",
              `aof-${port}`,
              "--appendfsync",
              options.appendfsync,
            ]
          : ["--appendonly", "no"]),
      ],
      { stdio: "ignore" },
    );
    processes.set(port, child);
  };
  const clusterNodes = async (port: number) => {
    const { stdout } = await run("redis-cli", ["-p", String(port), "cluster", "nodes"]);
    return stdout
      .trim()
      .split("\n")
      .map((line) => {
        const [id, address, flags, master] = line.split(" ");
        return {
          id: id as string,
          port: Number((address ?? "").split(":")[1]?.split("@")[0]),
          flags: (flags ?? "").split(","),
          master: master as string,
        };
      });
  };
  const alive = () => [...processes].filter(([, c]) => c.exitCode === null && !c.killed);
  try {
    const ports: number[] = [];
    const count = 3 * (1 + (options.replicas ?? 0));
    // Another picker (a file beside this one) can still choose the same port just before this
    // node binds it: a node that cannot start is started again on another port.
    const startOnFreePort = async (): Promise<number> => {
      for (let attempt = 1; ; attempt++) {
        const port = await clusterPort(taken);
        startNode(port);
        if (await waitForPing(port, processes.get(port))) return port;
        processes.delete(port);
        if (attempt === 3) throw new Error(`redis-server did not start on ${attempt} ports`);
      }
    };
    for (let i = 0; i < count; i++) ports.push(await startOnFreePort());
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      String(options.replicas ?? 0),
      "--cluster-yes",
    ]);
    for (const port of ports) await waitForClusterOk(port);
    const nodes = ports.map((port) => ({ host: "127.0.0.1", port }));
    const waitOk = async () => {
      for (const [port] of alive()) await waitForClusterOk(port);
    };
    return {
      nodes,
      seeds: nodes.map((n) => `${n.host}:${n.port}`).join(","),
      async masters() {
        const [port] = alive()[0] ?? [];
        const all = await clusterNodes(port as number);
        return all
          .filter((n) => n.flags.includes("master") && !n.flags.includes("fail"))
          .map((n) => n.port);
      },
      async replicaOf(masterPort) {
        const [port] = alive()[0] ?? [];
        const all = await clusterNodes(port as number);
        const master = all.find((n) => n.port === masterPort);
        return all.find(
          (n) => n.master === master?.id && n.flags.includes("slave") && !n.flags.includes("fail"),
        )?.port;
      },
      kill(port) {
        processes.get(port)?.kill("SIGKILL");
      },
      async restart(port) {
        startNode(port);
        if (!(await waitForPing(port, processes.get(port)))) {
          throw new Error(`redis-server did not start again on ${port}`);
        }
      },
      async failover(replicaPort) {
        await run("redis-cli", ["-p", String(replicaPort), "cluster", "failover"]);
        const deadline = Date.now() + 20_000;
        for (;;) {
          const me = (await clusterNodes(replicaPort)).find((n) => n.flags.includes("myself"));
          if (me?.flags.includes("master")) break;
          if (Date.now() > deadline) throw new Error(`node ${replicaPort} never became master`);
          await new Promise((r) => setTimeout(r, 100));
        }
        await waitOk();
      },
      waitOk,
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

/** Waits until the node answers PING: true; false when its process (if given) exited first. */
async function waitForPing(port: number, child?: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const { stdout } = await run("redis-cli", ["-p", String(port), "ping"]);
      if (stdout.trim() === "PONG") return true;
    } catch {
      // not up yet
    }
    if (child && (child.exitCode !== null || child.signalCode !== null)) return false;
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
