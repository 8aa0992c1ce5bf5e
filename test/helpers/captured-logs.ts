import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";

/** A pino destination that writes to a temp file synchronously, so every line can be scanned. */
export function captureLogs(name: string) {
  const dir = mkdtempSync(join(tmpdir(), "connector-logs-"));
  const path = join(dir, `${name}.log`);
  const destination = pino.destination({ dest: path, sync: true });
  return {
    destination,
    path,
    read: () => readFileSync(path, "utf8"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
