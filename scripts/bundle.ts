// The one esbuild setup for everything that runs as a production bundle: the connector's
// processes (scripts/build.ts) and the benchmarks' helper processes. Native addons stay in
// node_modules; CommonJS dependencies get a require() of their own.
import { build } from "esbuild";

export async function bundle(
  entryPoints: Record<string, string> | string[],
  out: { outdir: string } | { outfile: string },
): Promise<void> {
  await build({
    entryPoints,
    ...out,
    ...("outdir" in out ? { outExtension: { ".js": ".mjs" } } : {}),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    sourcemap: "linked",
    external: ["better-sqlite3", "msgpackr-extract", "playwright-core"],
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: "warning",
  });
}
