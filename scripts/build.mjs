// npm run build: the production bundle. One file per entry point (the server/worker process and
// the CLI), dependencies included, except native addons, which stay in node_modules.
// Loading ~450 small ESM modules through a TypeScript loader cost each process ~140 MB of RSS
// (BENCHMARKS.md, bench:worker); the bundle starts in a fraction of that.
import { build } from "esbuild";

await build({
  entryPoints: { main: "src/main.ts", cli: "src/cli/index.ts" },
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  sourcemap: "linked",
  external: ["better-sqlite3", "msgpackr-extract", "playwright-core"],
  // CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: "warning",
});
console.log("built dist/main.mjs and dist/cli.mjs");
