import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** A Node on this machine too old for the connector (Debian's Node 20 here), as a newcomer has. */
export function oldNode(): string {
  const found = execFileSync("sh", ["-c", "which -a node nodejs; ls /usr/bin/node 2>/dev/null"], {
    encoding: "utf8",
  })
    .split("\n")
    .filter(Boolean)
    .find((path) => {
      const run = spawnSync(path, ["-p", "process.versions.napi"], { encoding: "utf8" });
      return run.status === 0 && Number(run.stdout) < 10;
    });
  if (!found) throw new Error("these tests need a Node older than 22.15 on PATH, as Debian's 20");
  return found;
}

/** package.json's engines minimum ("22.15"), as the wrapper and the image's command name it. */
export function enginesMinimum(): string {
  const root = resolve(import.meta.dirname, "../..");
  const engines = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).engines.node;
  const minimum = /\d+(\.\d+)*/.exec(engines)?.[0];
  if (!minimum) throw new Error(`package.json's engines.node names no version: ${engines}`);
  return minimum;
}
