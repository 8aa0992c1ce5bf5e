// The `connector` command's entry in the production build (dist/cli.mjs): turns on the compile
// cache before the command's code is loaded (src/lib/compile-cache.ts).
import { enableCompileCache } from "../lib/compile-cache.ts";

enableCompileCache();
await import("./index.ts");
