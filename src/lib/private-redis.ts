import {
  existsSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../config/env.ts";
import { loopbackClient } from "./redis-server.ts";

/**
 * The record of the private redis-server `npm start` runs on a data directory: its PID and port,
 * written into its directory (data/redis) the moment it is spawned, removed when it is stopped.
 * A start reads it to find a server left running by a start that did not stop it (its process
 * killed with `kill -9` where the server could not be told): two servers on one directory would
 * write the same append-only files.
 */
export interface RedisRecord {
  pid: number;
  port: number;
}

export const redisRecordFile = (dir: string) => join(dir, "redis-server.json");

export function recordRedis(dir: string, record: RedisRecord): void {
  writeFileSync(redisRecordFile(dir), JSON.stringify(record), { mode: 0o600 });
}

/** Removes the record, if it still names this server. */
export function forgetRedis(dir: string, pid: number): void {
  if (readRecord(dir)?.pid === pid) rmSync(redisRecordFile(dir), { force: true });
}

function readRecord(dir: string): RedisRecord | null {
  try {
    const record = JSON.parse(readFileSync(redisRecordFile(dir), "utf8")) as Partial<RedisRecord>;
    if (Number.isInteger(record.pid) && Number.isInteger(record.port)) {
      return { pid: record.pid as number, port: record.port as number };
    }
  } catch {
    // none, or unreadable: nothing recorded
  }
  return null;
}

/** The port of a `redis://127.0.0.1:PORT` file (what starts before the record wrote only). */
function portOfUrlFile(file: string): number | null {
  try {
    const port = Number(new URL(readFileSync(file, "utf8").trim()).port);
    return Number.isInteger(port) && port > 0 ? port : null;
  } catch {
    return null;
  }
}

/** What the redis-server on this loopback port says it is: its PID and directory. */
async function identify(port: number): Promise<{ pid: number; dir: string } | null> {
  const probe = loopbackClient(port, { connectTimeout: 1000, commandTimeout: 2000 });
  try {
    await probe.connect();
    const info = await probe.info("server");
    const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
    const reply = (await probe.config("GET", "dir")) as string[];
    return Number.isInteger(pid) && reply[1] ? { pid, dir: reply[1] } : null;
  } catch {
    return null;
  } finally {
    probe.disconnect();
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** On Linux: whether this PID is a redis-server working in `dir` (a server chdirs to its dir). */
function servesDir(pid: number, dir: string): boolean {
  try {
    const comm = readFileSync(`/proc/${pid}/comm`, "utf8");
    return comm.startsWith("redis-server") && readlinkSync(`/proc/${pid}/cwd`) === dir;
  } catch {
    return false;
  }
}

async function shutdown(port: number): Promise<void> {
  const client = loopbackClient(port, { connectTimeout: 1000 });
  try {
    await client.connect();
    // With appendonly on, SHUTDOWN writes and syncs the AOF before the server exits: nothing
    // queued is lost. The server closes the connection instead of answering.
    await client.call("SHUTDOWN");
  } catch {
    // the connection closed by the server's exit, or a refusal: the wait below tells
  } finally {
    client.disconnect();
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/**
 * Before a start on `dir`: a redis-server left running there by an earlier start (found through
 * the record and the CLI's redis.url file, and verified: it answers on that port and says that
 * `dir` is its directory, so a recycled PID or another program's Redis is never touched) is
 * shut down cleanly. One that runs in `dir` but does not answer (frozen, or hung) stops the
 * start with its PID. The caller holds the data directory's instance lock: no live connector
 * uses that server.
 */
export async function stopLeftoverRedis(
  dir: string,
  options: { urlFile: string; logger: Logger; waitMs?: number },
): Promise<void> {
  const here = realpathSync(dir);
  const record = readRecord(dir);
  const ports = new Set<number>();
  if (record) ports.add(record.port);
  const fromUrl = existsSync(options.urlFile) ? portOfUrlFile(options.urlFile) : null;
  if (fromUrl) ports.add(fromUrl);
  for (const port of ports) {
    const found = await identify(port);
    if (!found || !sameDir(found.dir, here)) continue;
    options.logger.warn(
      { pid: found.pid, port },
      `a redis-server (PID ${found.pid}) from an earlier start still runs on ${dir}: shutting it down (its data is kept) before starting this one`,
    );
    await shutdown(port);
    if (!(await waitGone(found.pid, options.waitMs ?? 10_000))) {
      throw new ConfigError(
        `the redis-server (PID ${found.pid}) left running on ${dir} by an earlier start does not stop: stop it (kill ${found.pid}) and start again`,
      );
    }
  }
  if (record && isAlive(record.pid) && servesDir(record.pid, here)) {
    throw new ConfigError(
      `a redis-server (PID ${record.pid}) left running on ${dir} by an earlier start does not answer on port ${record.port}: stop it (kill ${record.pid}; kill -CONT ${record.pid} too if it was stopped) and start again`,
    );
  }
  rmSync(redisRecordFile(dir), { force: true });
}

function sameDir(reported: string, here: string): boolean {
  try {
    return realpathSync(reported) === here;
  } catch {
    return false;
  }
}
