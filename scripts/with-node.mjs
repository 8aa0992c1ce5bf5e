#!/usr/bin/env node
// The one door that `npm start`, `npm test`, the benchmarks and `npx connector` go through (the
// Gradle-wrapper idea): it runs a command under a Node that the connector supports, with native
// modules built for that Node and the services the command needs on the machine.
//
//   node scripts/with-node.mjs [--needs redis-server,chromium] <command> [args…]
//
// - Node: the running one when it is new enough (nothing downloaded); otherwise Node 24 from
//   the npm registry's `node` package, fetched once into a per-user cache
//   ($CONNECTOR_NODE_CACHE, else $XDG_CACHE_HOME or ~/.cache, under order-sync-connector/).
// - Native modules (better-sqlite3) are rebuilt for that Node when they were built for another
//   one (an `npm install` run by an older Node), so nothing ends in a segmentation fault.
// - Services: a missing redis-server (or chromium, for the browser tests) is installed with
//   apt-get when running as root; otherwise the one command that installs it is printed.
// It says on stderr which Node it uses and where that came from. It runs on Node 18 or newer.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { constants, homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const NODE_PACKAGE = "node@24";
const NATIVE_MODULES = ["better-sqlite3"];

function say(line) {
  process.stderr.write(`connector: ${line}\n`);
}

function fail(line) {
  say(line);
  process.exit(1);
}

/** The oldest Node major the connector runs on, from package.json's engines (">=22"). */
export function requiredMajor() {
  const engines = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).engines ?? {};
  const match = /(\d+)/.exec(engines.node ?? "");
  return match ? Number(match[1]) : 22;
}

export function cacheDir() {
  if (process.env.CONNECTOR_NODE_CACHE) return process.env.CONNECTOR_NODE_CACHE;
  const base = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(base, "order-sync-connector", "node-24");
}

function majorOf(nodePath) {
  const run = spawnSync(nodePath, ["-p", "process.versions.node"], { encoding: "utf8" });
  return run.status === 0 ? run.stdout.trim() : null;
}

/** The headers the `node` package ships (node-<platform>-<arch>/include/node), for node-gyp. */
function headersOf(cache) {
  const dir = join(cache, "node_modules", "node", "node_modules");
  if (!existsSync(dir)) return undefined;
  for (const name of readdirSync(dir)) {
    if (name.startsWith("node-") && existsSync(join(dir, name, "include", "node"))) {
      return join(dir, name);
    }
  }
  return undefined;
}

/**
 * The Node to run under: { path, version, from, headers? }. Fetches Node 24 into the cache when
 * the running Node is older than the connector needs and the cache has none yet.
 */
export function ensureNode() {
  const required = requiredMajor();
  const running = process.versions.node;
  if (Number(running.split(".")[0]) >= required) {
    return { path: process.execPath, version: running, from: "this machine" };
  }
  const cache = cacheDir();
  const cached = join(cache, "node_modules", "node", "bin", "node");
  let version = existsSync(cached) ? majorOf(cached) : null;
  if (!version) {
    say(
      `this machine's Node is ${running}, older than ${required}: fetching ${NODE_PACKAGE} from the npm registry into ${cache} (once)`,
    );
    const npm = spawnSync(
      "npm",
      ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", cache, NODE_PACKAGE],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    version = npm.status === 0 && existsSync(cached) ? majorOf(cached) : null;
    if (!version) {
      fail(
        `could not fetch ${NODE_PACKAGE} from the npm registry; install Node ${required} or newer and run the command again`,
      );
    }
  }
  return { path: cached, version, from: cache, headers: headersOf(cache) };
}

/** The environment a child runs in: the chosen Node first on PATH. */
export function envFor(node, base = process.env) {
  return { ...base, PATH: `${dirname(node.path)}${delimiter}${base.PATH ?? ""}` };
}

/** Rebuilds the native modules that the chosen Node cannot load (built for another Node). */
export function ensureNativeModules(node) {
  for (const name of NATIVE_MODULES) {
    if (!existsSync(join(ROOT, "node_modules", name))) continue;
    const probe = spawnSync(node.path, ["-e", `require(${JSON.stringify(name)})(":memory:")`], {
      cwd: ROOT,
      encoding: "utf8",
    });
    if (probe.status === 0) continue;
    if (
      !/NODE_MODULE_VERSION|compiled against a different Node|invalid ELF|cannot open shared object/.test(
        probe.stderr,
      )
    ) {
      fail(
        `${name} does not load under Node ${node.version}: ${probe.stderr.trim().split("\n")[0]}`,
      );
    }
    say(`${name} was built for another Node: rebuilding it for Node ${node.version} (once)`);
    const rebuild = spawnSync("npm", ["rebuild", name], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit"],
      // Against the chosen Node's own headers; from source, since no prebuilt binary for it is
      // in the package.
      env: {
        ...envFor(node),
        npm_config_build_from_source: "true",
        ...(node.headers ? { npm_config_nodedir: node.headers } : {}),
      },
    });
    if (rebuild.status !== 0) fail(`rebuilding ${name} for Node ${node.version} failed (above)`);
  }
}

const SERVICES = {
  "redis-server": { check: () => onPath("redis-server"), apt: "redis-server", brew: "redis" },
  chromium: { check: () => existsSync("/usr/bin/chromium"), apt: "chromium", brew: null },
};

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
      if (!process.env.REDIS_URL) ensureService("redis-server");
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
