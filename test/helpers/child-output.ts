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
