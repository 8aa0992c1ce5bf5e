// The one esbuild setup for everything that runs as a production bundle: the connector's
// processes (scripts/build.ts) and the benchmarks' helper processes. Native addons stay in
// node_modules; CommonJS dependencies get a require() of their own.
import { build } from "esbuild";

export async function bundle(
  entryPoints: Record<string, string> | string[],
  out: { outdir: string } | { outfile: string },
  options: { leaveOut?: RegExp } = {},
): Promise<void> {
  const { leaveOut } = options;
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
    // Modules the build must not contain (the development stand-ins): their imports stay as
    // they are written and fail to resolve at run time, where loadDevTool explains why.
    plugins: leaveOut
      ? [
          {
            name: "leave-out",
            setup(b) {
              b.onResolve({ filter: leaveOut }, (args) =>
                leaveOut.test(args.importer) ? undefined : { path: args.path, external: true },
              );
            },
          },
        ]
      : [],
  });
}
