import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PRODUCTION_ENV, PRODUCTION_NODE_FLAGS } from "../../bench/production.ts";

/**
 * The benches measure processes run as production runs them (bench/production.ts): the figures in
 * BENCHMARKS.md (a worker's resident memory under 200 MB among them) hold for the Dockerfile and
 * `npm run start:prod` only while both run with the same Node flags and environment.
 */
const dockerfile = readFileSync("Dockerfile", "utf8");
const startProd = (
  JSON.parse(readFileSync("package.json", "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts["start:prod"] as string;

/** The `ENV` settings of the Dockerfile's last stage (the image that runs). */
function imageEnv(): Map<string, string> {
  const stages = dockerfile.split(/^FROM /m);
  const last = stages[stages.length - 1] ?? "";
  const env = new Map<string, string>();
  for (const [, name, value] of last.matchAll(/^ENV (\w+)=(.*)$/gm)) {
    env.set(name as string, (value as string).replace(/^"(.*)"$/, "$1"));
  }
  return env;
}

describe("the production runtime settings", () => {
  it("are the image's: its NODE_OPTIONS carry the benches' flags and its ENV their environment", () => {
    const env = imageEnv();
    const options = (env.get("NODE_OPTIONS") ?? "").split(" ");
    for (const flag of PRODUCTION_NODE_FLAGS) expect(options).toContain(flag);
    for (const [name, value] of Object.entries(PRODUCTION_ENV)) expect(env.get(name)).toBe(value);
  });

  it("are start:prod's: its command sets the same environment and flags", () => {
    // The assignments, the wrapper (scripts/with-node.mjs: a supported Node, the bundle built),
    // and the command it runs.
    const [assignments, , command] = startProd.split(/ node /);
    const set = new Map(
      (assignments ?? "").split(" ").map((pair) => pair.split("=") as [string, string]),
    );
    for (const [name, value] of Object.entries(PRODUCTION_ENV)) expect(set.get(name)).toBe(value);
    for (const flag of PRODUCTION_NODE_FLAGS) expect((command ?? "").split(" ")).toContain(flag);
  });
});
