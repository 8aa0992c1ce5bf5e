/**
 * bench:startup — what a worker process costs before its first job: the CPU of
 * `node dist/main.mjs --role worker` (the production build, SQLite, a private redis-server)
 * from its start to its "connector ready" line, with the compile cache warm and turned off, and
 * the bare BullMQ worker's to its worker's 'ready' as the bound. Starts are taken in rounds, one
 * of each kind per round, so a machine whose speed moves from minute to minute moves them alike.
 *
 * `npm run bench:startup -- --starts 5`
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startRedisServer } from "../src/lib/redis-server.ts";
import { needChild, release } from "./children.ts";
import { PRODUCTION_ENV, PRODUCTION_NODE_FLAGS } from "./production.ts";

const { values: args } = parseArgs({
  options: { starts: { type: "string", default: "5" } },
});
const STARTS = Number(args.starts);

execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { stdio: "inherit" });
const { bundle } = await import("../scripts/bundle.ts");
await bundle(["bench/bare-worker.ts"], { outfile: "dist/bench-bare-worker.mjs" });

const redisServer = await startRedisServer();
needChild(redisServer.process, "redis-server");
const dir = mkdtempSync(join(tmpdir(), "bench-startup-"));
// As the Dockerfile and `npm run start:prod` run the process.
const FLAGS = PRODUCTION_NODE_FLAGS;

/** CPU (user + system) of a running process, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return ((Number(stat[11]) + Number(stat[12])) / 100) * 1000;
}

interface Kind {
  name: string;
  script: string[];
  env: Record<string, string>;
  /** The line the process writes once it is ready for jobs. */
  ready: RegExp;
}

const connectorEnv = (n: number): Record<string, string> => ({
  REDIS_URL: redisServer.url,
  REDIS_PREFIX: `bench-startup-${n}`,
  DATABASE_PATH: join(dir, `c-${n}.sqlite`),
  PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
  PROVIDER_AUTH_URL: "http://127.0.0.1:9/oauth",
  PROVIDER_AUDIENCE: "bench-startup",
  LOG_LEVEL: "info",
  // The cache of this bench's own, under its temporary directory (src/lib/compile-cache.ts).
  TMPDIR: dir,
});
const KINDS: Kind[] = [
  {
    name: "connector worker, compile cache warm",
    script: ["dist/main.mjs", "--role", "worker"],
    env: {},
    ready: /connector ready/,
  },
  {
    name: "connector worker, compile cache off",
    script: ["dist/main.mjs", "--role", "worker"],
    env: { NODE_DISABLE_COMPILE_CACHE: "1" },
    ready: /connector ready/,
  },
  {
    name: "bare BullMQ worker",
    script: ["dist/bench-bare-worker.mjs"],
    env: { REDIS_URL: redisServer.url, PREFIX: "bench-startup-bare" },
    ready: /^ready$/m,
  },
];

let started = 0;
/** Starts one process, reads its CPU at its ready line, and stops it. */
async function startOnce(kind: Kind): Promise<number> {
  started += 1;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...PRODUCTION_ENV,
    ...connectorEnv(started),
    ...kind.env,
  };
  if (!kind.env.NODE_DISABLE_COMPILE_CACHE) delete env.NODE_DISABLE_COMPILE_CACHE;
  delete env.NODE_COMPILE_CACHE;
  const child = needChild(
    spawn(process.execPath, [...FLAGS, ...kind.script], {
      env,
      stdio: ["ignore", "pipe", "inherit"],
    }),
    kind.name,
  );
  const ms = await new Promise<number>((resolve) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (kind.ready.test(out)) {
        child.stdout?.removeAllListeners("data");
        resolve(cpuMs(child.pid as number));
      }
    });
  });
  release(child);
  await new Promise((resolve) => {
    child.once("exit", resolve);
    child.kill("SIGKILL");
  });
  return ms;
}

// One start first: it writes the compile cache the warm rows read.
await startOnce(KINDS[0] as Kind);
const figures = new Map<Kind, number[]>(KINDS.map((k) => [k, []]));
for (let round = 0; round < STARTS; round++) {
  for (const kind of KINDS) figures.get(kind)?.push(await startOnce(kind));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)] ?? Number.NaN;
};
console.log(
  `\nbench:startup — CPU from start to ready for jobs, ${STARTS} starts of each, in rounds\n`,
);
console.log("| process | median CPU ms | min | max | each start (ms) |");
console.log("|---|---|---|---|---|");
for (const [kind, xs] of figures) {
  console.log(
    `| ${kind.name} | ${median(xs).toFixed(0)} | ${Math.min(...xs).toFixed(0)} | ${Math.max(...xs).toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(", ")} |`,
  );
}
release(redisServer.process);
await redisServer.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
