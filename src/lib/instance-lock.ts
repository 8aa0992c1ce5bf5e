import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { ConfigError } from "../config/env.ts";

/**
 * One `npm start` per data directory: the private Redis, the sandbox's file and redis.url belong
 * to the process that holds `connector.pid`. A second start is refused with the running one's
 * PID; a file left by a process that no longer runs is taken over.
 */
export function acquireInstanceLock(path: string, dataDir: string): () => void {
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        if (ownerOf(path) === process.pid) rmSync(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = ownerOf(path);
      if (owner !== null && owner !== process.pid && isRunning(owner)) {
        throw new ConfigError(
          `another connector (PID ${owner}) is running on ${dataDir}: stop it first (kill ${owner}), or give this one its own DATABASE_PATH`,
        );
      }
      rmSync(path, { force: true });
    }
  }
  throw new ConfigError(`could not take ${path}: remove it if no connector is running`);
}

function ownerOf(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
