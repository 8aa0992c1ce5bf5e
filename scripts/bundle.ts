// The one esbuild setup for everything that runs as a production bundle: the connector's
// processes (scripts/build.ts) and the benchmarks' helper processes. Native addons stay in
// node_modules; CommonJS dependencies get a require() of their own. The Redis scripts (every
// `lua/` folder under src/) are copied into `<out>/lua/`, where src/lib/lua.ts finds them.
import { cpSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { build } from "esbuild";

/**
 * The product's entry points: the process (`dist/main.mjs`) and the `connector` command
 * (`dist/cli.mjs`), each a small file that turns on the compile cache and then loads its code.
 */
export const PRODUCT_ENTRIES = { main: "src/start.ts", cli: "src/cli/start.ts" } as const;

/**
 * Copies every `lua` folder under src/ into `<outdir>/lua/`; two scripts of one name are an error.
 * (`readdirSync`'s recursive walk, not `globSync`: that is experimental in Node 22, and printed a
 * warning on the first `npx connector` of a checkout.)
 */
function copyLua(root: string, outdir: string): void {
  const target = join(outdir, "lua");
  const seen = new Map<string, string>();
  const folders = readdirSync(join(root, "src"), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name === "lua")
    .map((entry) => join(entry.parentPath, entry.name));
  for (const dir of folders) {
    const files = readdirSync(dir, { recursive: true, encoding: "utf8" });
    for (const file of files.filter((path) => path.endsWith(".lua"))) {
      const other = seen.get(file);
      if (other) throw new Error(`two Lua scripts would both be lua/${file}: ${other} and ${dir}`);
      seen.set(file, dir);
    }
    cpSync(dir, target, { recursive: true });
  }
  if (seen.size === 0) throw new Error(`no Lua scripts found under ${root}/src`);
}

export async function bundle(
  entryPoints: Record<string, string> | string[],
  out: { outdir: string } | { outfile: string },
  options: { leaveOut?: RegExp } = {},
): Promise<void> {
  const { leaveOut } = options;
  // The scripts of the tree the entry points are in (a source checkout, or a copy of one).
  const first = Array.isArray(entryPoints) ? entryPoints[0] : Object.values(entryPoints)[0];
  const root = first?.includes("/src/") ? first.slice(0, first.lastIndexOf("/src/")) : ".";
  copyLua(root || ".", "outdir" in out ? out.outdir : dirname(out.outfile));
  await build({
    entryPoints,
    ...out,
    // Several entry points share their code in chunks; what a process imports only when it
    // needs it (the web role in a worker, the tracing SDK when traces are off) is a chunk of its
    // own, so a process compiles and loads only the code it runs.
    ...("outdir" in out
      ? { outExtension: { ".js": ".mjs" }, splitting: true, chunkNames: "[name]-[hash]" }
      : {}),
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
    // Packages the build must not contain (the development stand-ins): each import of one becomes
    // a module that fails as a missing module does, where loadDevTool explains why, even when
    // the bundle runs in a source checkout that has them.
    plugins: leaveOut
      ? [
          {
            name: "leave-out",
            setup(b) {
              b.onResolve({ filter: leaveOut }, (args) => ({
                path: args.path,
                namespace: "left-out",
              }));
              b.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
                contents: `throw Object.assign(new Error(${JSON.stringify(`${args.path} is not in the production build`)}), { code: "ERR_MODULE_NOT_FOUND" });`,
                loader: "js",
              }));
            },
          },
        ]
      : [],
  });
}
