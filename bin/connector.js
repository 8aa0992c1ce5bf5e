#!/usr/bin/env node
// The `connector` command. In a source checkout it runs the TypeScript CLI through tsx's loader
// (no build step); in a production install (`npm ci --omit=dev`, no tsx) it runs the bundle.
import { existsSync } from "node:fs";

const sources = new URL("../src/cli/index.ts", import.meta.url);
const tsx = await import("tsx/esm/api").catch(() => undefined);
if (tsx && existsSync(sources)) {
  tsx.register();
  await import(sources.href);
} else {
  await import(new URL("../dist/cli.mjs", import.meta.url).href);
}
