/**
 * The processes a bench runs (receivers, workers, the sandbox, its private redis-server). One
 * that ends while the bench still needs it ends the bench at once, instead of leaving it
 * waiting for an answer that never comes: one line naming the process and how it ended, the
 * other processes stopped, exit code 1.
 */
import type { ChildProcess } from "node:child_process";
import { basename } from "node:path";

const needed = new Map<ChildProcess, string>();
const bench = basename(process.argv[1] ?? "bench").replace(/\.ts$/, "");

/** Ends the bench if `child` exits (or cannot start) before `release(child)`. */
export function needChild<T extends ChildProcess>(child: T, name: string): T {
  needed.set(child, name);
  const died = (how: string) => {
    if (!needed.has(child)) return; // stopped on purpose
    needed.delete(child);
    process.stderr.write(
      `bench:${bench}: ${name} (pid ${child.pid ?? "none"}) ${how} while the bench needed it; stopping\n`,
    );
    for (const other of needed.keys()) other.kill("SIGKILL");
    needed.clear();
    process.exit(1);
  };
  child.once("exit", (code, signal) =>
    died(signal ? `was ended by ${signal}` : `exited with code ${code}`),
  );
  child.once("error", (error) => died(`could not run (${error.message})`));
  return child;
}

/** The bench stops `child` itself from here on: its exit is expected. */
export function release(child: ChildProcess): void {
  needed.delete(child);
}
