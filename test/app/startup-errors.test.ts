import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { collectOutput } from "../helpers/child-output.ts";
import { connectorEntry } from "../helpers/cli.ts";
import { freePortPair } from "../helpers/ports.ts";

/**
 * The failures of an ordinary week, as an operator meets them with real processes: each ends in
 * one line naming the cause and the fix, with a non-zero exit where the process cannot go on,
 * and never a child process (redis-server, the sandbox) left behind.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
  waitFor(text: string, ms?: number): Promise<void>;
}

function start(env: Record<string, string>, args: string[] = []): Run {
  const child = spawn(process.execPath, connectorEntry(...args), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const { out, exited } = collectOutput(child);
  return {
    child,
    out,
    exited,
    async waitFor(text, ms = 30_000) {
      const deadline = Date.now() + ms;
      while (!out().includes(text)) {
        if (child.exitCode !== null) throw new Error(`exited before "${text}": ${out()}`);
        if (Date.now() > deadline) throw new Error(`no "${text}" within ${ms} ms: ${out()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "startup-"));
  dirs.push(dir);
  return join(dir, "data");
}

/** The private redis-server's URL, from the line that announced it. */
function privateRedisUrl(out: string): string {
  const line = out.split("\n").find((l) => l.includes("started a private redis-server"));
  return (JSON.parse(line ?? "{}") as { url: string }).url;
}

async function isGone(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  probe.on("error", () => {});
  try {
    await probe.connect();
    return false;
  } catch {
    return true;
  } finally {
    probe.disconnect();
  }
}

/** The operator's lines: not the JSON log lines. */
const plain = (out: string) => out.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("{"));

describe("start-up failures an operator can act on", () => {
  it("refuses a second npm start on the same data directory, naming the running one, and touches nothing of it", async () => {
    const data = dataDir();
    const env = {
      PORT: String(await freePortPair()),
      DATABASE_PATH: join(data, "connector.sqlite"),
    };
    const first = start(env);
    await first.waitFor("connector ready");
    const redisUrl = readFileSync(join(data, "redis", "redis.url"), "utf8");

    const second = start({ ...env, PORT: String(await freePortPair()) });
    expect(await second.exited).toBe(2);
    expect(plain(second.out())).toEqual([
      `another connector (PID ${first.child.pid}) is running on ${data}: stop it first (kill ${first.child.pid}), or give this one its own DATABASE_PATH`,
    ]);
    expect(second.out()).not.toContain("started a private redis-server");
    expect(readFileSync(join(data, "redis", "redis.url"), "utf8")).toBe(redisUrl);
    first.child.kill("SIGTERM");
    await first.exited;
    expect(existsSync(join(data, "connector.pid"))).toBe(false);
  });

  it("names PORT when another program holds it, and stops the redis-server and sandbox it had started", async () => {
    const data = dataDir();
    const port = await freePortPair();
    const taken: Server = createServer();
    await new Promise<void>((r) => taken.listen(port, "127.0.0.1", r));
    try {
      const run = start({ PORT: String(port), DATABASE_PATH: join(data, "connector.sqlite") });
      expect(await run.exited).toBe(2);
      expect(plain(run.out())).toContain(
        `PORT 127.0.0.1:${port} is in use by another program: stop that program or choose another port`,
      );
      expect(run.out()).not.toMatch(/at .*\.ts:\d+|Unhandled 'error' event/);
      expect(await isGone(privateRedisUrl(run.out()))).toBe(true);
      expect(existsSync(join(data, "connector.pid"))).toBe(false);
      expect(existsSync(join(data, "redis", "redis.url"))).toBe(false);
    } finally {
      taken.close();
    }
  });

  it("web role: names an unreachable REDIS_URL once per attempt, backs off, and exits after REDIS_WAIT_MS", async () => {
    const closed = await freePort();
    const run = start(
      {
        REDIS_URL: `redis://127.0.0.1:${closed}`,
        REDIS_WAIT_MS: "2500",
        DATABASE_PATH: join(dataDir(), "connector.sqlite"),
        PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
        PROVIDER_AUTH_URL: "http://127.0.0.1:9",
        PROVIDER_AUDIENCE: "none",
        PORT: String(await freePort()),
      },
      ["--role", "web"],
    );
    expect(await run.exited).toBe(2);
    const attempts = run
      .out()
      .split("\n")
      .filter((l) => l.includes("is unreachable (ECONNREFUSED); attempt"));
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts.length).toBeLessThanOrEqual(4);
    expect(attempts[0]).toContain(
      `REDIS_URL redis://127.0.0.1:${closed} is unreachable (ECONNREFUSED); attempt 1, trying again in 0.5 s`,
    );
    expect(plain(run.out())).toEqual([
      expect.stringMatching(
        new RegExp(
          `^REDIS_URL redis://127\\.0\\.0\\.1:${closed} is unreachable \\(ECONNREFUSED\\) after \\d+ s: start Redis or point REDIS_URL at it$`,
        ),
      ),
    ]);
    expect(run.out()).not.toMatch(/at .*\.ts:\d+|errno/);
  });

  it("worker role: keeps waiting for Redis, saying so, and starts once it answers", async () => {
    const port = await freePort();
    const run = start(
      {
        REDIS_URL: `redis://127.0.0.1:${port}`,
        DATABASE_PATH: join(dataDir(), "connector.sqlite"),
        PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
        PROVIDER_AUTH_URL: "http://127.0.0.1:9",
        PROVIDER_AUDIENCE: "none",
      },
      ["--role", "worker"],
    );
    await run.waitFor("attempt 3, trying again in 2 s", 15_000);
    expect(run.child.exitCode).toBeNull();
    const { startRedisServer } = await import("../../src/lib/redis-server.ts");
    const redis = await startRedisServer({ port });
    try {
      await run.waitFor("connector ready", 30_000);
    } finally {
      run.child.kill("SIGTERM");
      await run.exited;
      await redis.stop();
    }
  });
});
