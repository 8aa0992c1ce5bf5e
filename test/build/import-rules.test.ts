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

  it("holds the layers inside a feature, and keeps features apart", () => {
    const dir = tree({
      // A feature's settings section (server layer) …
      "src/features/claims/section/view.tsx": "export const view = 1;\n",
      // … must not be reached by its repository (store layer).
      "src/features/claims/repository.ts":
        'import { view } from "./section/view.tsx";\nexport const repository = view;\n',
      // A domain file must not import its feature's worker (jobs layer).
      "src/features/products/worker.ts": "export const worker = 1;\n",
      "src/features/products/importer.ts":
        'import { worker } from "./worker.ts";\nexport const importer = worker;\n',
      // A feature's worker (jobs) and its routes (server) share a layer: no sideways import.
      "src/features/products/routes.tsx":
        'import { worker } from "./worker.ts";\nexport const routes = worker;\n',
      // A feature does not import another feature, even downward.
      "src/features/registrations/command.ts":
        'import { repository } from "../claims/repository.ts";\nexport const command = repository;\n',
      // A layer folder below a role must not import it: store/ under a feature's settings.
      "src/features/claims/settings.ts": "export const settings = 1;\n",
      "src/store/shops.ts":
        'import { settings } from "../features/claims/settings.ts";\nexport const shops = settings;\n',
    });
    const { status, output } = cruise(dir, "src");
    expect(status).not.toBe(0);
    expect(output).toMatch(
      /no-upward-from-store: src\/features\/claims\/repository\.ts → src\/features\/claims\/section\/view\.tsx/,
    );
    expect(output).toMatch(
      /no-upward-from-backfill-features: src\/features\/products\/importer\.ts → src\/features\/products\/worker\.ts/,
    );
    expect(output).toMatch(
      /no-sideways-from-server: src\/features\/products\/routes\.tsx → src\/features\/products\/worker\.ts/,
    );
    expect(output).toMatch(
      /no-cross-feature: src\/features\/registrations\/command\.ts → src\/features\/claims\/repository\.ts/,
    );
    expect(output).toMatch(
      /no-upward-from-store: src\/store\/shops\.ts → src\/features\/claims\/settings\.ts/,
    );
  });

  it("lets a feature's files import down its own slice and the layer folders", () => {
    const dir = tree({
      "src/store/database.ts": "export const db = 1;\n",
      "src/features/claims/repository.ts":
        'import { db } from "../../store/database.ts";\nexport const repository = db;\n',
      "src/features/claims/settings.ts":
        'import { repository } from "./repository.ts";\nexport const settings = repository;\n',
      "src/features/claims/section/view.tsx":
        'import { settings } from "../settings.ts";\nexport const view = settings;\n',
      "src/server/settings/sections.ts":
        'import { view } from "../../features/claims/section/view.tsx";\nexport const sections = [view];\n',
      "src/features/claims/command.ts":
        'import { repository } from "./repository.ts";\nexport const command = repository;\n',
    });
    const { status, output } = cruise(dir, "src");
    expect(output).toMatch(/no dependency violations found/);
    expect(status).toBe(0);
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
