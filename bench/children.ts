/**
 * The processes a bench runs (receivers, workers, the sandbox, its private redis-server). One
 * that ends while the bench still needs it ends the bench at once, instead of leaving it
 * waiting for an answer that never comes: one line naming the process and how it ended, the
 * other processes stopped, exit code 1.
 */
import type { ChildProcess } from "node:child_process";
import { constants } from "node:os";
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

/** What else the bench started that must not outlive it (a Postgres server), stopped at its end. */
const atExit = new Set<() => void>();

/** Runs `stop` when the bench ends, however it ends, unless it ran its own stop first. */
export function stopAtExit(stop: () => void): () => void {
  atExit.add(stop);
  return () => atExit.delete(stop);
}

// However the bench itself ends: an error it did not catch (Node still emits 'exit'), or a
// signal (Ctrl-C, kill), which would otherwise end it at once. The processes it still needs
// would be left running: a private redis-server, workers, receivers, a Postgres server.
process.on("exit", () => {
  for (const child of needed.keys()) child.kill("SIGKILL");
  needed.clear();
  for (const stop of atExit) {
    try {
      stop();
    } catch {
      // already gone
    }
  }
});
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench:${bench}: ${signal}; stopping the processes it started\n`);
    process.exit(128 + (constants.signals[signal] ?? 0));
  });
}

/** The bench stops `child` itself from here on: its exit is expected. */
export function release(child: ChildProcess): void {
  needed.delete(child);
}
