import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** The suites that cross every folder of src/ (ARCHITECTURE.md, "Tests"): nothing else may sit beside the mirror. */
const CROSS_CUTTING = [
  "bench",
  "build",
  "chaos",
  "deploy",
  "fixtures",
  "helpers",
  "integration",
  "packages",
  "security",
];

function folders(dir: string): string[] {
  return readdirSync(dir).filter((name) => statSync(join(dir, name)).isDirectory());
}

/** Every folder under `dir`, relative to it (`engine/limiter`, …). */
function tree(dir: string, base = dir): string[] {
  return folders(dir).flatMap((name) => {
    const path = join(dir, name);
    return [relative(base, path), ...tree(path, base)];
  });
}

describe("the test tree", () => {
  it("mirrors src/: every test folder is a folder of src/ or a named cross-cutting suite", () => {
    const source = new Set(tree(join(ROOT, "src")));
    const strays = tree(join(ROOT, "test"))
      .filter((path) => !CROSS_CUTTING.includes(path.split("/")[0] ?? ""))
      .filter((path) => !source.has(path));
    expect(strays, "move these tests beside the folder of src/ they test").toEqual([]);
  });

  it("names every cross-cutting suite in ARCHITECTURE.md", () => {
    const architecture = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");
    for (const name of CROSS_CUTTING) expect(architecture).toContain(`\`test/${name}/\``);
  });

  it("has the packages' suites under test/packages/<package>", () => {
    const packages = new Set(folders(join(ROOT, "packages")));
    for (const name of folders(join(ROOT, "test/packages"))) expect(packages).toContain(name);
  });
});
