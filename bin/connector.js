#!/usr/bin/env node
// The `connector` command. In a source checkout it runs the TypeScript CLI through tsx's loader
// (no build step); in a production install (`npm ci --omit=dev`, no tsx) it runs the bundle.
// Under a Node that cannot run the connector (older than it needs: better-sqlite3 would end in a
// segmentation fault), it runs itself again under the Node that scripts/with-node.mjs picks,
// fetched once into a per-user cache, or stops with one line where that script is not shipped.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const wrapper = new URL("../scripts/with-node.mjs", import.meta.url);
if (existsSync(wrapper)) {
  const { tooOld, ensureNode, ensureNativeModules, envFor } = await import(wrapper.href);
  if (tooOld()) {
    const node = ensureNode();
    process.stderr.write(`connector: using Node ${node.version} from ${node.from}\n`);
    ensureNativeModules(node);
    const run = spawnSync(node.path, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: "inherit",
      env: envFor(node),
    });
    process.exit(run.status ?? 1);
  }
} else if (Number(process.versions.napi ?? 0) < 10) {
  // An install without scripts/ (the container image, whose Node is new enough).
  console.error(
    `connector: Node ${process.versions.node} is too old; the connector needs Node 22.14 or newer`,
  );
  process.exit(1);
}

const sources = new URL("../src/cli/index.ts", import.meta.url);
const tsx = await import("tsx/esm/api").catch(() => undefined);
if (tsx && existsSync(sources)) {
  tsx.register();
  await import(sources.href);
} else if (existsSync(new URL("../dist/cli.mjs", import.meta.url))) {
  await import(new URL("../dist/cli.mjs", import.meta.url).href);
} else {
  console.error("connector: no dependencies installed here: run `npm install` first");
  process.exit(1);
}
