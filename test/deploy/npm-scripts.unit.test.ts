import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const scripts = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts;

/**
 * npm runs a script through `sh -c`, and Debian's sh (dash) waits for the command instead of
 * becoming it: a SIGTERM sent to npm alone (`kill NPM_PID`, a supervisor stopping its main
 * process) is passed to that shell, which dies of it and leaves the wrapper and the connector
 * running under init. `exec` makes the wrapper npm's own child, and the wrapper passes the
 * signal on (test/app/crash-safe-start.test.ts sends it to `npm start`).
 */
describe("the npm scripts that run the Node wrapper", () => {
  const wrapped = Object.entries(scripts).filter(([, command]) =>
    command.includes("scripts/with-node.mjs"),
  );

  it("are the connector's, its tests' and its benches'", () => {
    const names = wrapped.map(([name]) => name);
    for (const name of ["start", "start:web", "start:worker", "start:prod", "connector", "test"]) {
      expect(names).toContain(name);
    }
  });

  it("exec it, so that a signal to npm reaches it (environment assignments may come first)", () => {
    const notExec = wrapped.filter(
      ([, command]) => !/^(\w+=\S+ )*exec node scripts\/with-node\.mjs /.test(command),
    );
    expect(notExec, "start them as `exec node scripts/with-node.mjs …`").toEqual([]);
  });
});
