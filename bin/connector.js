#!/usr/bin/env node
// The `connector` command. In a source checkout it runs a bundle of the TypeScript CLI that it
// builds into dist/dev/ (esbuild, with the development stand-ins) the first time and again only
// when a source changed: loading ~450 modules through tsx took 2–3 s of CPU a call, the bundle a
// few hundred ms. In a production install (`npm ci --omit=dev`: no sources, no esbuild) it runs
// dist/cli.mjs. Under a Node that cannot run the connector (older than it needs: better-sqlite3
// would end in a segmentation fault), it runs itself again under the Node that
// scripts/with-node.mjs picks, fetched once into a per-user cache, or stops with one line where
// that script is not shipped.
//
// npm links it as node_modules/.bin/connector through the `@connector/cli` dependency (this
// folder), so `npx connector` runs it straight away. Were it the root package's own `bin`, npx
// would install the whole checkout into its cache first: a second of CPU a call, and on the first
// call npm's own EBADENGINE warnings under an old Node.
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import module from "node:module";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// `npx connector …` runs this command under `sh -c`, which a SIGTERM sent to npx alone ends
// without passing it on: the command ran on under init (a supervisor stopping npx, `kill PID`).
// So when the process that started it is gone, it stops as on a SIGTERM of its own, once.
const startedBy = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === startedBy) return;
  clearInterval(orphaned);
  process.kill(process.pid, "SIGTERM");
}, 1_000);
orphaned.unref();

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const wrapper = join(ROOT, "scripts", "with-node.mjs");
if (existsSync(wrapper)) {
  const { tooOld, ensureNode, ensureNativeModules, envFor } = await import(
    pathToFileURL(wrapper).href
  );
  if (tooOld()) {
    const node = ensureNode();
    process.stderr.write(`connector: using Node ${node.version} from ${node.from}\n`);
    nativeModulesChecked(node, () => ensureNativeModules(node));
    const child = spawn(node.path, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: "inherit",
      env: envFor(node),
    });
    // A signal sent to this process alone (`kill PID`, a supervisor stopping it) is passed on, as
    // scripts/with-node.mjs does: it would otherwise end this process and leave the command
    // running under init. Ctrl-C reaches the child through the terminal's process group.
    process.on("SIGINT", () => {});
    for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
    const code = await new Promise((resolve) => {
      child.on("exit", (exitCode, signal) =>
        resolve(exitCode ?? 128 + (constants.signals[signal] ?? 1)),
      );
      child.on("error", (error) => {
        console.error(`connector: could not run Node ${node.version}: ${error.message}`);
        resolve(1);
      });
    });
    process.exit(code);
  }
} else {
  // An install without scripts/ (the container image, whose Node is new enough): the same floor,
  // package.json's engines minimum and Node-API 10, said in one line.
  const engines = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).engines?.node;
  const minimum = /\d+(\.\d+){0,2}/.exec(engines ?? "")?.[0] ?? "22.15";
  const [have, want] = [process.versions.node, minimum].map((v) => v.split(".").map(Number));
  const older = want.findIndex((part, i) => (have[i] ?? 0) !== part);
  if ((older >= 0 && have[older] < want[older]) || Number(process.versions.napi ?? 0) < 10) {
    console.error(
      `connector: Node ${process.versions.node} is too old; the connector needs Node ${minimum} or newer`,
    );
    process.exit(1);
  }
}

const entry = join(ROOT, "src", "cli", "index.ts");
const production = join(ROOT, "dist", "cli.mjs");
if (existsSync(entry) && existsSync(join(ROOT, "node_modules", "esbuild"))) {
  // V8's code cache on disk (Node 22.1 on): the bundle is compiled once, not on every call. The
  // production bundle's entry turns on its own, in a directory private to the user.
  module.enableCompileCache?.();
  const bundle = await devBundle().catch((error) => {
    // esbuild has printed where the sources do not build.
    console.error(
      `connector: could not bundle the CLI from src/ (${error.message.split("\n")[0]})`,
    );
    process.exit(1);
  });
  await import(pathToFileURL(bundle).href);
} else if (existsSync(production)) {
  await import(pathToFileURL(production).href);
} else {
  console.error("connector: no dependencies installed here: run `npm install` first");
  process.exit(1);
}

/**
 * dist/dev/cli.mjs, built again when anything it is made of is newer: the sources, the stand-ins'
 * sources, the bundler setup, or the installed dependencies (npm rewrites
 * node_modules/.package-lock.json on every install). One folder below dist/, as the production
 * bundle is, so that it finds the migrations (../../drizzle) and its Redis scripts (./lua/).
 * Built beside it and renamed into place: two commands building at once never see half of one.
 */
async function devBundle() {
  const dir = join(ROOT, "dist", "dev");
  const bundle = join(dir, "cli.mjs");
  const built = existsSync(bundle) ? statSync(bundle).mtimeMs : 0;
  const inputs = [
    join(ROOT, "src"),
    join(ROOT, "packages"),
    join(ROOT, "scripts", "bundle.ts"),
    join(ROOT, "package.json"),
    join(ROOT, "node_modules", ".package-lock.json"),
  ];
  const { newestChange } = await import(pathToFileURL(wrapper).href);
  if (built > 0 && inputs.every((input) => (newestChange(input)?.mtimeMs ?? 0) < built)) {
    return bundle;
  }

  const partial = join(ROOT, "dist", `dev.partial-${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  const { register } = await import("tsx/esm/api");
  const unregister = register();
  try {
    const { bundle: build } = await import(pathToFileURL(join(ROOT, "scripts", "bundle.ts")).href);
    await build({ cli: entry }, { outdir: partial });
  } finally {
    await unregister();
  }
  rmSync(dir, { recursive: true, force: true });
  try {
    renameSync(partial, dir);
  } catch {
    // Another command put its build in place meanwhile: as good as ours.
    rmSync(partial, { recursive: true, force: true });
  }
  return bundle;
}

/**
 * Runs the wrapper's native-module check (it starts the chosen Node once to load
 * better-sqlite3) only when something it depends on changed since it last passed here: the
 * chosen Node, or better-sqlite3's install or build. The mark lives in node_modules/.cache.
 */
function nativeModulesChecked(node, check) {
  const modules = join(ROOT, "node_modules", "better-sqlite3");
  const mtime = (path) => (existsSync(path) ? statSync(path).mtimeMs : 0);
  const key = [node.path, node.version, mtime(modules), mtime(join(modules, "build"))].join("\n");
  const mark = join(ROOT, "node_modules", ".cache", "connector", "native-modules-checked");
  if (existsSync(mark) && readFileSync(mark, "utf8") === key) return;
  check();
  mkdirSync(dirname(mark), { recursive: true });
  writeFileSync(mark, key);
}
