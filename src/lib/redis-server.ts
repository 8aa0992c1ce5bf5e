import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./free-port.ts";

/** A port the kernel says is free right now (the caller retries if it loses the race). */
export { freePort };

export interface RedisServerOptions {
  /** AOF persistence; off by default (tests want none). */
  appendonly?: boolean;
  appendfsync?: "always" | "everysec" | "no";
  /** Directory for the AOF and any dump; a fresh temp dir when omitted. */
  dir?: string;
  port?: number;
  /**
   * A server owned by one long-running process (`npm start`'s private Redis): in a process group
   * of its own, so a terminal's Ctrl-C or a SIGTERM to the group reaches only its owner, which
   * stops it last; and on Linux told to stop (SIGTERM, a clean shutdown) when its owner dies,
   * even by `kill -9` (`setpriv --pdeathsig`).
   */
  owned?: boolean;
  /** Called once the server's process exists, before it answers: record it at once. */
  onSpawn?: (pid: number, port: number) => void;
}

export interface RedisServerHandle {
  url: string;
  port: number;
  dir: string;
  process: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * A one-shot client for a redis-server on this machine's loopback: it connects when asked, never
 * retries, and its failures are answered by the caller's own try, not logged.
 */
export function loopbackClient(
  port: number,
  timeouts: { connectTimeout?: number; commandTimeout?: number } = {},
): Redis {
  const client = new Redis({
    port,
    host: "127.0.0.1",
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...timeouts,
  });
  client.on("error", () => {});
  return client;
}

/**
 * Starts a private `redis-server` on loopback: used by the test suite, the benchmarks and
 * `npm start` when no REDIS_URL is given. `maxmemory-policy noeviction` as BullMQ requires.
 */
export async function startRedisServer(
  options: RedisServerOptions = {},
): Promise<RedisServerHandle> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "connector-redis-")));
  const ownsDir = options.dir === undefined;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = options.port ?? (await freePort());
    const args = [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      options.appendonly ? "yes" : "no",
      "--appendfsync",
      options.appendfsync ?? "everysec",
      "--maxmemory-policy",
      "noeviction",
      "--protected-mode",
      "yes",
      "--loglevel",
      "warning",
    ];
    const [command, commandArgs] = options.owned
      ? withParentDeathSignal("redis-server", args)
      : ["redis-server", args];
    const child = spawn(command, commandArgs, {
      stdio: ["ignore", "ignore", "pipe"],
      detached: options.owned === true,
    });
    try {
      if (child.pid !== undefined) options.onSpawn?.(child.pid, port);
      await waitUntilReady(child, port);
    } catch (error) {
      lastError = error;
      child.kill("SIGKILL");
      if (options.port !== undefined) break;
      continue;
    }
    const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill(signal);
        await exited;
      }
      if (ownsDir) await rm(dir, { recursive: true, force: true });
    };
    return { url: `redis://127.0.0.1:${port}`, port, dir, process: child, stop };
  }
  throw new Error(
    `could not start redis-server (is it installed and on PATH?): ${String(lastError)}`,
  );
}

let pdeathsig: boolean | undefined;

/**
 * On Linux, `setpriv --pdeathsig SIGTERM` (util-linux) before the command: the kernel sends the
 * child SIGTERM when its parent dies, however it dies. setpriv execs the command, so the child's
 * PID is the command's. Elsewhere, or without setpriv, the command as it is.
 */
function withParentDeathSignal(command: string, args: string[]): [string, string[]] {
  if (pdeathsig === undefined) {
    pdeathsig =
      process.platform === "linux" &&
      /--pdeathsig/.test(spawnSync("setpriv", ["--help"], { encoding: "utf8" }).stdout ?? "");
  }
  return pdeathsig ? ["setpriv", ["--pdeathsig", "SIGTERM", command, ...args]] : [command, args];
}

async function waitUntilReady(child: ChildProcess, port: number): Promise<void> {
  let spawnError: Error | undefined;
  child.once("error", (error) => {
    spawnError = error;
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (spawnError) throw spawnError;
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const probe = loopbackClient(port);
    try {
      await probe.connect();
      if ((await probe.ping()) === "PONG") return;
    } catch {
      // not listening yet
    } finally {
      probe.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("redis-server did not answer PING within 10 s");
}
