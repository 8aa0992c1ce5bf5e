// npm run build: the production bundle, one file per entry point (the server/worker process and
// the CLI) and the chunks they share or load when needed. Loading ~450 small ESM modules
// through a TypeScript loader cost each process ~140 MB of RSS (BENCHMARKS.md, bench:worker);
// the bundle starts in a fraction of that.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { bundle, PRODUCT_ENTRIES } from "./bundle.ts";

// The previous build's chunks (`<name>-<hash>.mjs`): their names change with their content, so
// each build would otherwise leave the last one's beside its own.
const OUT = "dist";
mkdirSync(OUT, { recursive: true });
for (const name of readdirSync(OUT, { withFileTypes: true })) {
  if (name.isFile() && /^(main|cli)\.mjs(\.map)?$|-[A-Z0-9]{8}\.mjs(\.map)?$/.test(name.name)) {
    rmSync(join(OUT, name.name));
  }
}

// The provider sandbox and the stand-in Shopify are development tools: never in the product.
await bundle(PRODUCT_ENTRIES, { outdir: OUT }, { leaveOut: /^@connector\// });
console.log("built dist/main.mjs and dist/cli.mjs");
