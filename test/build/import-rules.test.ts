import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

// The import rules `npm run check` enforces (.dependency-cruiser.cjs, ARCHITECTURE.md): the
// repository keeps them, and a tree that breaks one is refused with the rule's name.
const ROOT = resolve(import.meta.dirname, "../..");
const DEPCRUISE = join(ROOT, "node_modules", ".bin", "depcruise");

function cruise(cwd: string, ...paths: string[]) {
  const run = spawnSync(
    DEPCRUISE,
    [...paths, "--config", join(cwd, ".dependency-cruiser.cjs"), "--output-type", "err"],
    { cwd, encoding: "utf8" },
  );
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const fixtures: string[] = [];
afterAll(() => {
  for (const dir of fixtures) rmSync(dir, { recursive: true, force: true });
});

/** A small tree with the repository's rules and tsconfig, and the given files. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "import-rules-"));
  fixtures.push(dir);
  copyFileSync(join(ROOT, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  copyFileSync(join(ROOT, "tsconfig.json"), join(dir, "tsconfig.json"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe("import rules", () => {
  it("the repository keeps every rule", () => {
    const { status, output } = cruise(ROOT, "src", "packages");
    expect(output).toMatch(/no dependency violations found/);
    expect(status).toBe(0);
  });

  it("refuses an upward import, I/O in sync/, a stand-in in the product and a cycle", () => {
    const dir = tree({
      "src/store/links.ts": "export const links = 1;\n",
      // sync/ is below store/ and must stay free of I/O.
      "src/sync/plan.ts":
        'import { links } from "../store/links.ts";\nexport const plan = links;\n',
      // engine/ must not reach the composition root.
      "src/app/root.ts": "export const root = 1;\n",
      "src/engine/run.ts": 'import { root } from "../app/root.ts";\nexport const run = root;\n',
      // The product must not import a stand-in statically.
      "packages/provider-sandbox/src/index.ts": "export const sandbox = 1;\n",
      "src/server/app.ts":
        'import { sandbox } from "../../packages/provider-sandbox/src/index.ts";\nexport const app = sandbox;\n',
      // Two modules of one folder that need each other.
      "src/ingest/a.ts": 'import { b } from "./b.ts";\nexport const a = () => b;\n',
      "src/ingest/b.ts": 'import { a } from "./a.ts";\nexport const b = () => a;\n',
    });
    const { status, output } = cruise(dir, "src", "packages");
    expect(status).not.toBe(0);
    expect(output).toMatch(/sync-is-pure: src\/sync\/plan\.ts → src\/store\/links\.ts/);
    expect(output).toMatch(/no-upward-from-engine: src\/engine\/run\.ts → src\/app\/root\.ts/);
    expect(output).toMatch(/no-stand-in-in-the-product: src\/server\/app\.ts/);
    expect(output).toMatch(/no-circular: src\/ingest\/a\.ts/);
  });

  it("lets the product reach a stand-in through a dynamic import only", () => {
    const dir = tree({
      "packages/provider-sandbox/src/index.ts": "export const sandbox = 1;\n",
      "src/cli/sandbox-command.ts":
        'export const load = () => import("../../packages/provider-sandbox/src/index.ts");\n',
    });
    const { status, output } = cruise(dir, "src", "packages");
    expect(output).toMatch(/no dependency violations found/);
    expect(status).toBe(0);
  });
});
