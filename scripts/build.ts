// npm run build: the production bundle, one file per entry point (the server/worker process and
// the CLI) and the chunks they share or load when needed. Loading ~450 small ESM modules through a TypeScript loader cost each process ~140 MB
// of RSS (BENCHMARKS.md, bench:worker); the bundle starts in a fraction of that.
import { bundle, PRODUCT_ENTRIES } from "./bundle.ts";

// The provider sandbox and the stand-in Shopify are development tools: never in the product.
await bundle(PRODUCT_ENTRIES, { outdir: "dist" }, { leaveOut: /^@connector\// });
console.log("built dist/main.mjs and dist/cli.mjs");
