import type { ChildProcess } from "node:child_process";

/** Everything a child writes to stdout and stderr, interleaved, and its exit code when it ends. */
export function collectOutput(child: ChildProcess): {
  out: () => string;
  exited: Promise<number | null>;
} {
  let out = "";
  child.stdout?.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return { out: () => out, exited };
}

/** Asks each child still running to stop (SIGTERM) and waits until it has exited. */
export async function stopChildren(children: ChildProcess[]): Promise<void> {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
  }
}
