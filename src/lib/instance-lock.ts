import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { ConfigError } from "../config/env.ts";

/**
 * One `npm start` per data directory: the private Redis, the sandbox's file and redis.url belong
 * to the process that holds `connector.pid`. A second start is refused with the running one's
 * PID; a file left by a process that no longer runs is taken over. The file holds the PID and,
 * on Linux, the process's start time, so a PID the system has since given to another process
 * is not mistaken for the connector that wrote it.
 */
export function acquireInstanceLock(path: string, dataDir: string): () => void {
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, `${process.pid}\n${startTimeOf(process.pid) ?? ""}\n`);
      closeSync(fd);
      return () => {
        if (ownerOf(path)?.pid === process.pid) rmSync(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = ownerOf(path);
      if (owner !== null && owner.pid !== process.pid && isRunning(owner)) {
        throw new ConfigError(
          `another connector (PID ${owner.pid}) is running on ${dataDir}: stop it first (kill ${owner.pid}), or give this one its own DATABASE_PATH`,
        );
      }
      rmSync(path, { force: true });
    }
  }
  throw new ConfigError(`could not take ${path}: remove it if no connector is running`);
}

interface Owner {
  pid: number;
  /** The process's start time when it took the lock; "" where unknown. */
  started: string;
}

function ownerOf(path: string): Owner | null {
  try {
    const [first, second] = readFileSync(path, "utf8").split("\n");
    const pid = Number(first?.trim());
    return Number.isInteger(pid) && pid > 0 ? { pid, started: second?.trim() ?? "" } : null;
  } catch {
    return null;
  }
}

/** Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot (Linux). */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After "pid (comm) " (comm may hold spaces and parentheses) come fields 3, 4, …
    return stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .at(22 - 3);
  } catch {
    return undefined;
  }
}

function isRunning(owner: Owner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const now = owner.started ? startTimeOf(owner.pid) : undefined;
  // Another process under a recycled PID started later than the one that wrote the file.
  return now === undefined || now === owner.started;
}
