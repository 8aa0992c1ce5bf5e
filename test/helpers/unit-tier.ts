import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { afterAll } from "vitest";
import { inUnitTest, unitTierError } from "./services.ts";

/**
 * Set-up of every test file (both tiers): in a `*.unit.test.*` file, starting a child process
 * (a redis-server, PostgreSQL, Chromium, the CLI…) throws the unit tier's rule instead. Under
 * `npm test` a mislabelled file fails the same way as under `npm run test:unit`, so CI catches
 * it. Node's `syncBuiltinESMExports` makes `import { spawn } from "node:child_process"` see the
 * change; the file's end puts the real functions back for the next file in the same worker.
 */
if (inUnitTest()) {
  const starters = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"];
  const module = childProcess as unknown as Record<string, unknown>;
  const real = new Map(starters.map((name) => [name, module[name]]));
  for (const name of starters) {
    module[name] = (command: unknown) => {
      throw unitTierError(`a child process (${String(command)})`);
    };
  }
  syncBuiltinESMExports();
  afterAll(() => {
    for (const [name, fn] of real) module[name] = fn;
    syncBuiltinESMExports();
  });
}
