import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { QUEUE, queueOptions } from "../../src/queue/names.ts";
import { collectOutput } from "../helpers/child-output.ts";
import { connectorEntry } from "../helpers/cli.ts";
import { bareMachine } from "../helpers/no-toolchain.ts";
import { freePortPair } from "../helpers/ports.ts";
import { descendantsOf, type SeenProcess, seeProcess, signalSeen } from "../helpers/processes.ts";

/**
 * `npm start` as an operator meets it on a real machine: killed with `kill -9`, its terminal
 * closed (SIGHUP to its process group), and a shutdown that cannot finish. Real processes all
 * the way: npm, scripts/with-node.mjs, the connector, its private redis-server.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const DEMO_SHOP = "demo-shop.myshopify.com";
const DEV_SECRET = "dev-shopify-api-secret";
const dirs: string[] = [];
/**
 * Every process a test started or found, killed in afterEach if it is still that process (its
 * pid may belong to another file's process by then: `signalSeen`), and the process groups the
 * tests started, each killed while its leader is gone or still the one started.
 */
const seen: SeenProcess[] = [];
const pids = {
  add(pid: number) {
    const found = seeProcess(pid);
    if (found) seen.push(found);
  },
};
const groups: SeenProcess[] = [];
afterEach(() => {
  for (const found of seen.splice(0)) {
    signalSeen(found, "SIGCONT");
    signalSeen(found, "SIGKILL");
  }
  for (const leader of groups.splice(0)) {
    const now = seeProcess(leader.pid);
    if (now && now.startTicks !== leader.startTicks) continue; // another group's leader now
    try {
      process.kill(-leader.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Start {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
  /** The connector's own process (npm → the wrapper → node), from connector.pid. */
  pid: number;
}

interface Machine {
  data: string;
  env: Record<string, string>;
}

function machine(extra: Record<string, string> = {}, hide: string[] = []): Machine {
  const dir = mkdtempSync(join(tmpdir(), "crash-safe-"));
  dirs.push(dir);
  const data = join(dir, "data");
  // This machine's programs (minus `hide`), the Node running the tests first.
  const base = bareMachine(join(dir, "machine"), { hide });
  const env = {
    ...base.env,
    HOME: process.env.HOME ?? base.home,
    DATABASE_PATH: join(data, "connector.sqlite"),
    LOG_LEVEL: "info",
    ...extra,
  };
  return { data, env };
}

/** `npm start [-- args]` in a process group of its own, until "connector ready". */
async function npmStart(m: Machine, args: string[] = []): Promise<Start> {
  const port = await freePortPair();
  const child = spawn("npm", ["start", ...(args.length ? ["--", ...args] : [])], {
    cwd: ROOT,
    env: { ...m.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const leader = child.pid === undefined ? undefined : seeProcess(child.pid);
  if (leader) groups.push(leader);
  const { out, exited } = collectOutput(child);
  await until(
    () => out().includes("connector ready"),
    60_000,
    () => out(),
  );
  const pid = Number(readFileSync(join(m.data, "connector.pid"), "utf8").split("\n")[0]);
  pids.add(pid);
  for (const redis of redisServersOn(m.data)) pids.add(redis);
  return { child, out, exited, pid };
}

async function until(
  condition: () => boolean | Promise<boolean>,
  ms: number,
  explain: () => string = () => "",
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${explain().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

/** Every redis-server process working in data/redis (a redis-server chdirs to its --dir). */
function redisServersOn(data: string): number[] {
  const dir = realpathSync(join(data, "redis"));
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, "utf8").startsWith("redis-server")) continue;
      if (readlinkSync(`/proc/${entry}/cwd`) === dir && alive(Number(entry))) {
        found.push(Number(entry));
      }
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** The PPID of a process, from /proc. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

async function sendOrders(port: number, ids: number[]): Promise<void> {
  const example = JSON.parse(readFileSync(join(ROOT, "examples/orders-create.json"), "utf8"));
  for (const id of ids) {
    const signed = signWebhook({
      topic: "orders/create",
      shop: DEMO_SHOP,
      body: JSON.stringify({ ...example, id, admin_graphql_api_id: `gid://shopify/Order/${id}` }),
      secret: DEV_SECRET,
    });
    const res = await fetch(`http://127.0.0.1:${port}/webhooks/shopify`, {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
    expect(res.status, await res.text()).toBe(200);
  }
}

/** The sync jobs not yet done, read from the data directory's Redis. */
async function queuedJobs(data: string): Promise<number> {
  const url = readFileSync(join(data, "redis", "redis.url"), "utf8");
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE.sync, queueOptions(connection, "connector"));
  try {
    const counts = await queue.getJobCounts("waiting", "prioritized", "delayed", "active");
    return Object.values(counts).reduce((a, b) => a + b, 0);
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

function portOf(start: Start): number {
  const line = start
    .out()
    .split("\n")
    .find((l) => l.includes("connector ready"));
  return Number(/127\.0\.0\.1:(\d+)/.exec(line ?? "")?.[1]);
}

describe("npm start, crashed and restarted on the same data directory", () => {
  it("kill -9 where the redis-server cannot be told (no setpriv): the next start shuts the orphan down, runs one, keeps every queued job", async () => {
    // Without setpriv (as on macOS) nothing tells the private redis-server its parent died.
    const m = machine({}, ["setpriv"]);
    const first = await npmStart(m, ["--role", "web"]);
    const [redis] = redisServersOn(m.data);
    expect(redis).toBeDefined();
    await sendOrders(portOf(first), [7001, 7002, 7003]);
    expect(await queuedJobs(m.data)).toBe(3);

    process.kill(first.pid, "SIGKILL");
    await first.exited;
    // What the issue saw: the redis-server outlives its connector, adopted by init.
    await until(() => parentOf(redis as number) !== first.pid, 10_000);
    expect(redisServersOn(m.data)).toEqual([redis]);
    expect(existsSync(join(m.data, "connector.pid"))).toBe(true);

    const second = await npmStart(m, ["--role", "web"]);
    expect(second.out()).toContain(
      `a redis-server (PID ${redis}) from an earlier start still runs on ${join(m.data, "redis")}: shutting it down (its data is kept) before starting this one`,
    );
    expect(alive(redis as number)).toBe(false);
    const servers = redisServersOn(m.data);
    expect(servers).toHaveLength(1);
    expect(servers[0]).not.toBe(redis);
    expect(await queuedJobs(m.data)).toBe(3);

    process.kill(-(second.child.pid as number), "SIGTERM");
    await second.exited;
    await until(() => redisServersOn(m.data).length === 0, 10_000);
  }, 180_000);

  it("kill -9 on Linux: the private redis-server stops with its connector, and the next start finds one server and every job", async () => {
    const m = machine();
    const first = await npmStart(m, ["--role", "web"]);
    const [redis] = redisServersOn(m.data);
    await sendOrders(portOf(first), [7101, 7102]);

    process.kill(first.pid, "SIGKILL");
    await first.exited;
    await until(() => !alive(redis as number), 10_000);

    const second = await npmStart(m, ["--role", "web"]);
    expect(second.out()).not.toContain("from an earlier start still runs");
    expect(redisServersOn(m.data)).toHaveLength(1);
    expect(await queuedJobs(m.data)).toBe(2);
    process.kill(-(second.child.pid as number), "SIGTERM");
    await second.exited;
  }, 180_000);

  it("a stale connector.pid whose PID now belongs to another process is replaced", async () => {
    const m = machine();
    const first = await npmStart(m);
    // Its file, left as by a kill -9, now naming a live process that is no connector: this test.
    process.kill(first.pid, "SIGKILL");
    await first.exited;
    const pidFile = join(m.data, "connector.pid");
    const [, started] = readFileSync(pidFile, "utf8").split("\n");
    writeFileSync(pidFile, `${process.pid}\n${started}\n`);

    const second = await npmStart(m);
    expect(second.pid).not.toBe(process.pid);
    process.kill(-(second.child.pid as number), "SIGTERM");
    await second.exited;
  }, 180_000);
});

describe("npm start, stopped", () => {
  it("SIGHUP to its process group (the terminal closed): shuts down, stops its redis-server, leaves no pid or sandbox file", async () => {
    const m = machine();
    const start = await npmStart(m);
    const [redis] = redisServersOn(m.data);
    expect(existsSync(join(m.data, "provider-sandbox.json"))).toBe(true);

    process.kill(-(start.child.pid as number), "SIGHUP");
    await until(() => !alive(start.pid), 20_000, start.out);
    await start.exited;
    expect(start.out()).toMatch(/"signal":"SIGHUP".*"msg":"shutting down"/);
    expect(start.out()).not.toContain("shutdown did not finish");
    expect(alive(redis as number)).toBe(false);
    expect(redisServersOn(m.data)).toEqual([]);
    for (const file of ["connector.pid", "provider-sandbox.json", "redis/redis.url"]) {
      expect(existsSync(join(m.data, file)), file).toBe(false);
    }
  }, 120_000);

  it("SIGTERM to npm alone (`kill NPM_PID`, as a supervisor that signals its main process does): the connector shuts down and npm exits, nothing left", async () => {
    const m = machine();
    const start = await npmStart(m);
    const below = descendantsOf(start.child.pid as number).map((p) => p.pid);
    expect(below).toContain(start.pid);
    const [redis] = redisServersOn(m.data);

    start.child.kill("SIGTERM");
    // npm passes the signal to its script's process; a shell in between would die of it and
    // leave the wrapper and the connector running, reparented to init.
    await until(() => !alive(start.pid), 20_000, start.out);
    expect(await start.exited).toBe(0);
    expect(start.out()).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
    expect(below.filter(alive)).toEqual([]);
    expect(alive(redis as number)).toBe(false);
    expect(existsSync(join(m.data, "connector.pid"))).toBe(false);
  }, 120_000);

  it("SIGHUP to the connector alone: exit code 0", async () => {
    const m = machine();
    const child = spawn(process.execPath, connectorEntry(), {
      cwd: ROOT,
      env: { ...m.env, PORT: String(await freePortPair()) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid) pids.add(child.pid);
    const { out, exited } = collectOutput(child);
    await until(() => out().includes("connector ready"), 60_000, out);
    for (const redis of redisServersOn(m.data)) pids.add(redis);
    child.kill("SIGHUP");
    expect(await exited).toBe(0);
    expect(redisServersOn(m.data)).toEqual([]);
    expect(existsSync(join(m.data, "connector.pid"))).toBe(false);
  }, 120_000);

  it("a shutdown that cannot finish (its Redis frozen) exits non-zero at SHUTDOWN_TIMEOUT_MS, naming what it waited for", async () => {
    const m = machine({ SHUTDOWN_TIMEOUT_MS: "2000" });
    const child = spawn(process.execPath, connectorEntry(), {
      cwd: ROOT,
      env: { ...m.env, PORT: String(await freePortPair()) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    if (child.pid) pids.add(child.pid);
    const { out, exited } = collectOutput(child);
    await until(() => out().includes("connector ready"), 60_000, out);
    const [redis] = redisServersOn(m.data);
    pids.add(redis as number);
    process.kill(redis as number, "SIGSTOP");

    const asked = Date.now();
    child.kill("SIGTERM");
    expect(await exited).toBe(1);
    const took = Date.now() - asked;
    expect(took).toBeGreaterThanOrEqual(2000);
    expect(took).toBeLessThan(8000);
    const line = out()
      .split("\n")
      .find((l) => l.includes("shutdown did not finish"));
    expect(line).toMatch(
      /"msg":"shutdown did not finish within SHUTDOWN_TIMEOUT_MS \(2000 ms\): still waiting for the workers to stop; exiting"/,
    );
    // The frozen server was told to stop: once it runs again it does.
    process.kill(redis as number, "SIGCONT");
    await until(() => !alive(redis as number), 10_000);
    expect(existsSync(join(m.data, "connector.pid"))).toBe(false);
  }, 120_000);
});
