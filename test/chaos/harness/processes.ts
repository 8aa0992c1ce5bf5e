import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Every child the harness started and has not seen exit: killed if the harness itself exits. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** Also kills `child` if the harness process exits first (a timed-out test, a crash). */
export function killOnHarnessExit(child: ChildProcess): void {
  running.add(child);
  child.once("exit", () => running.delete(child));
}

/** A real child process (node + tsx), its output appended to a log file the harness can scan. */
export class ManagedProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set once the process printed the line a scenario waited for (it is serving). */
  ready = false;
  #output = "";

  constructor(
    readonly name: string,
    args: string[],
    env: Record<string, string>,
    readonly logPath: string,
  ) {
    const log = createWriteStream(logPath, { flags: "a" });
    this.child = spawn(process.execPath, ["--import", "tsx", ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    killOnHarnessExit(this.child);
    const collect = (chunk: Buffer) => {
      log.write(chunk);
      // Only the start of the output is kept in memory, for readiness lines.
      if (this.#output.length < 64_000) this.#output += chunk.toString("utf8");
    };
    this.child.stdout?.on("data", collect);
    this.child.stderr?.on("data", collect);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        log.end();
        resolve({ code, signal });
      }),
    );
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits until the process printed a line matching `pattern`; fails if it exits first. */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const match = pattern.exec(this.#output);
      if (match) {
        this.ready = true;
        return match[0];
      }
      if (!this.alive) {
        throw new Error(`${this.name} exited before ${pattern}: ${this.#output.slice(-2_000)}`);
      }
      await sleep(50);
    }
    throw new Error(`${this.name} did not print ${pattern} within ${timeoutMs} ms`);
  }

  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (!this.alive) return;
    this.child.kill(signal);
    await this.exited;
  }

  /** Stops gracefully (SIGTERM), then hard after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.alive) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  log(): string {
    return readFileSync(this.logPath, "utf8");
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
