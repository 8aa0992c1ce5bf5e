#!/usr/bin/env node
// The `connector` command. In a source checkout it runs the TypeScript CLI through tsx's loader
// (no build step); in a production install (`npm ci --omit=dev`, no tsx) it runs the bundle.
// Under a Node older than the connector needs, it runs itself again under the Node that
// scripts/with-node.mjs brings (native modules built for it), instead of crashing.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const major = Number(process.versions.node.split(".")[0]);
if (major < 22) {
  const wrapper = new URL("../scripts/with-node.mjs", import.meta.url);
  if (!existsSync(wrapper)) {
    console.error(
      `connector: Node ${process.versions.node} is too old; the connector needs Node 22 or newer`,
    );
    process.exit(1);
  }
  const { ensureNode, ensureNativeModules, envFor } = await import(wrapper.href);
  const node = ensureNode();
  ensureNativeModules(node);
  const run = spawnSync(node.path, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: envFor(node),
  });
  process.exit(run.status ?? 1);
}

const sources = new URL("../src/cli/index.ts", import.meta.url);
const tsx = await import("tsx/esm/api").catch(() => undefined);
if (tsx && existsSync(sources)) {
  tsx.register();
  await import(sources.href);
} else {
  await import(new URL("../dist/cli.mjs", import.meta.url).href);
}
