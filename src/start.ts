// The process's entry in the production build (dist/main.mjs): turns on the compile cache
// before the connector's code is loaded, so that code is compiled from the cache. The build
// loads each role's code only in the process that runs it (scripts/bundle.ts).
import { enableCompileCache } from "./lib/compile-cache.ts";

enableCompileCache();
await import("./main.ts");
