// npm run build: the production bundle, one file per entry point (the server/worker process and
// the CLI). Loading ~450 small ESM modules through a TypeScript loader cost each process ~140 MB
// of RSS (BENCHMARKS.md, bench:worker); the bundle starts in a fraction of that.
import { bundle } from "./bundle.ts";

// The provider sandbox and the stand-in Shopify are development tools: never in the product.
await bundle(
  { main: "src/main.ts", cli: "src/cli/index.ts" },
  { outdir: "dist" },
  { leaveOut: /^@connector\// },
);
console.log("built dist/main.mjs and dist/cli.mjs");
