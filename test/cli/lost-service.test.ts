import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { withContext } from "../../src/app/cli.ts";
import { withStore } from "../../src/cli/shops-command.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { ServiceLostError } from "../../src/lib/outage.ts";
import { freePort, startRedisServer } from "../../src/lib/redis-server.ts";
import { cliEntry } from "../helpers/cli.ts";
import { type PostgresHandle, startPostgres } from "../helpers/postgres.ts";
import { freezeTree, listProcesses, thawTree } from "../helpers/processes.ts";
import { startRedisCluster } from "../helpers/redis-cluster.ts";

/**
 * A command whose Redis or Postgres stops answering after the command connected: stopped
 * (SIGSTOP: the connection stays open, nothing answers, as a frozen VM or a partition) or killed
 * (ioredis reconnects for ever). Before, only the start was bounded: `status`, `dlq list`, a
 * backfill's progress and every other command then waited for ever, silently. Now each ends
 * within the start's bound (5 s) with one line naming the setting, the cause and the fix, exit 1.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const LINE_REDIS = (url: string, cause: string) =>
  `REDIS_URL ${url} stopped answering during the command (${cause}): start Redis or check REDIS_URL, then run the command again`;
const NO_ANSWER = "no answer within 5 s";
/** Generous: the bound is 5 s; a hang is what is tested for, not the machine's speed. */
const GENEROUS_MS = 30_000;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "lost-service-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const configFor = (env: Record<string, string>) =>
  resolveRuntimeConfig(
    parseEnv({ DATABASE_PATH: join(dir, "connector.sqlite"), LOG_LEVEL: "silent", ...env }),
  );

/** What a wrapped action ended with, and how long it took. */
async function outcome(run: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await run().then(
    () => null,
    (rejected: unknown) => rejected,
  );
  return { error, ms: Date.now() - started };
}

async function privateRedis() {
  const redis = await startRedisServer();
  // SIGKILL: a stopped redis-server would keep a SIGTERM pending for ever.
  onTestFinished(() => redis.stop("SIGKILL"));
  return redis;
}

describe("a command whose Redis stops answering after it connected", () => {
  it.each([
    ["stopped (SIGSTOP)", "SIGSTOP" as const, NO_ANSWER],
    ["killed", "SIGKILL" as const, "ECONNREFUSED"],
  ])("ends with one line within the bound: %s", async (_, signal, cause) => {
    const redis = await privateRedis();
    const { error, ms } = await outcome(() =>
      withContext(configFor({ REDIS_URL: redis.url }), async (ctx) => {
        await ctx.redis.set("lost-service", "1");
        redis.process.kill(signal);
        // What a command does next: its queues' and its own reads.
        await ctx.queues.deadLetter.getJobCounts();
        await ctx.redis.get("lost-service");
      }),
    );
    expect(error).toBeInstanceOf(ServiceLostError);
    expect((error as Error).message).toBe(LINE_REDIS(redis.url, cause));
    expect(ms).toBeLessThan(GENEROUS_MS);
  });

  it("lets a command that is slow for other reasons run as long as it takes", async () => {
    const redis = await privateRedis();
    // Twice the bound, with Redis answering throughout: not a loss.
    const result = await withContext(configFor({ REDIS_URL: redis.url }), async (ctx) => {
      await new Promise((done) => setTimeout(done, 10_000));
      return ctx.redis.ping();
    });
    expect(result).toBe("PONG");
  });
});

describe("a command whose Redis Cluster loses a master after it connected", () => {
  it.each([
    ["stopped (SIGSTOP)", "SIGSTOP" as const],
    ["killed", "SIGKILL" as const],
  ])(
    "ends with one line within the bound, although the other masters answer: %s",
    async (_, signal) => {
      const cluster = await startRedisCluster();
      onTestFinished(() => cluster.stop());
      const { error, ms } = await outcome(() =>
        withContext(configFor({ REDIS_CLUSTER_NODES: cluster.seeds }), async (ctx) => {
          const keys = Array.from({ length: 30 }, (_, i) => `lost-service:{${i}}`);
          for (const key of keys) await ctx.redis.set(key, "1");
          const [master] = await cluster.masters();
          if (master === undefined) throw new Error("the cluster has no master");
          const node = listProcesses().find((p) =>
            new RegExp(`^redis-server \\S+:${master} `).test(p.command),
          );
          if (!node) throw new Error(`no redis-server on port ${master}`);
          // A stopped one is killed by the cleanup's SIGKILL (cluster.stop).
          process.kill(node.pid, signal);
          // Keys on every master: those of the dead one are never answered.
          for (const key of keys) await ctx.redis.get(key);
        }),
      );
      expect(error).toBeInstanceOf(ServiceLostError);
      const message = (error as Error).message;
      expect(message.startsWith("REDIS_CLUSTER_NODES 127.0.0.1:")).toBe(true);
      expect(message).toMatch(
        /stopped answering during the command \(.+\): start Redis or check REDIS_CLUSTER_NODES, then run the command again$/,
      );
      expect(ms).toBeLessThan(GENEROUS_MS);
    },
    90_000,
  );
});

describe("the CLI when Redis stops answering while it follows a backfill", () => {
  it("prints the line and exits 1 instead of waiting for ever", async () => {
    const redis = await privateRedis();
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      REDIS_URL: redis.url,
      DATABASE_PATH: join(dir, "cli.sqlite"),
      LOG_LEVEL: "silent",
    };
    const shop = "lost-redis.myshopify.com";
    const added = await run(
      [
        "shops",
        "add",
        "--shop",
        shop,
        "--provider-client-id",
        "id",
        "--provider-client-secret",
        "secret",
        "--store-id",
        "1001",
        "--access-token",
        "shpat_lost",
        "--no-verify",
      ],
      env,
    );
    expect(added.code).toBe(0);
    // No worker runs: the backfill stays queued, and the command follows it until Ctrl-C.
    const child = spawn(process.execPath, [...cliEntry(), "backfill", "--shop", shop], {
      cwd: ROOT,
      env,
    });
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });
    const output = collect(child);
    await until(() => output.stdout.includes(`started for ${shop}`), "the backfill to start");
    redis.process.kill("SIGSTOP");
    await until(() => output.code !== undefined, "the command to end");
    expect(output.code).toBe(1);
    expect(output.stderr.trim()).toBe(`connector: ${LINE_REDIS(redis.url, NO_ANSWER)}`);
  });
});

describe("the CLI when Redis is stopped before the command starts", () => {
  it("is refused at the start within the bound, naming the setting", async () => {
    // Before, the start's probe waited for ever too: its connect timeout ends once the socket
    // connects, and a stopped server's kernel still accepts the connection.
    const redis = await privateRedis();
    redis.process.kill("SIGSTOP");
    const started = Date.now();
    const status = await run(["status"], {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      REDIS_URL: redis.url,
      DATABASE_PATH: join(dir, "cli.sqlite"),
    });
    expect(Date.now() - started).toBeLessThan(GENEROUS_MS);
    expect(status.code).toBe(2);
    expect(status.stderr.trim()).toBe(
      `connector: REDIS_URL ${redis.url} is unreachable (it accepted the connection and gave no answer within 5 s): start Redis or check REDIS_URL`,
    );
  });
});

describe("the CLI when Postgres is down before the command starts", () => {
  // `status` opens withContext (the commands that use Redis too), `shops list` withStore (the
  // database alone).
  it.each(["status", "shops list"])(
    "`connector %s` names DATABASE_URL, the cause and the fix, exit 2",
    async (command) => {
      // A stopped Postgres: nothing listens on its port (ECONNREFUSED). Before, the commands that
      // use Redis too said "nothing answers at 127.0.0.1:PORT (is the connector running? check
      // REDIS_URL and APP_URL, or the command's --url)", exit 1.
      const redis = await privateRedis();
      const where = `postgres://127.0.0.1:${await freePort()}/connector`;
      const started = Date.now();
      const result = await run(command.split(" "), {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        REDIS_URL: redis.url,
        DATABASE_URL: where.replace("//", "//connector@"),
      });
      expect(Date.now() - started).toBeLessThan(GENEROUS_MS);
      expect(result.stderr.trim()).toMatch(
        new RegExp(
          `^connector: DATABASE_URL ${where} is unreachable \\(ECONNREFUSED\\) after \\d+ s: start Postgres or point DATABASE_URL at it$`,
        ),
      );
      expect(result.code).toBe(2);
    },
  );
});

describe("a command whose Postgres stops answering after it connected", () => {
  let server: PostgresHandle;
  let url: string;
  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase("lost_service");
  });
  afterAll(() => server.stop());

  it("ends withStore and withContext with one line naming DATABASE_URL", async () => {
    onTestFinished(() => thawTree(server.pid()));
    const redis = await privateRedis();
    const config = configFor({ REDIS_URL: redis.url, DATABASE_URL: url });
    // The URL as every line shows it: without its user and password.
    const where = url.replace("connector@", "");
    const line = `DATABASE_URL ${where} stopped answering during the command (${NO_ANSWER}): start Postgres or check DATABASE_URL, then run the command again`;
    for (const wrapper of [
      (action: (db: { pg: { execute(q: unknown): Promise<unknown> } }) => Promise<unknown>) =>
        withStore(config, (db) => action(db as never)),
      (action: (db: { pg: { execute(q: unknown): Promise<unknown> } }) => Promise<unknown>) =>
        withContext(config, (ctx) => action(ctx.db as never)),
    ]) {
      const { error, ms } = await outcome(() =>
        wrapper(async (db) => {
          await db.pg.execute(sql`select 1`);
          // Every process of the server, postmaster and backends.
          await freezeTree(server.pid());
          await db.pg.execute(sql`select 2`);
        }),
      );
      thawTree(server.pid());
      expect(error).toBeInstanceOf(ServiceLostError);
      expect((error as Error).message).toBe(line);
      expect(ms).toBeLessThan(GENEROUS_MS);
    }
  });
});

function run(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [...cliEntry(), ...args], { cwd: ROOT, env });
  const output = collect(child);
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
    child.once("close", () => done({ ...output, code: output.code ?? 1 })),
  );
}

function collect(child: ChildProcess) {
  const output: { stdout: string; stderr: string; code?: number | undefined } = {
    stdout: "",
    stderr: "",
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    output.stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output.stderr += chunk.toString();
  });
  child.once("close", (code, signal) => {
    output.code = code ?? (signal ? 128 : 1);
  });
  return output;
}

async function until(done: () => boolean, what: string) {
  const deadline = Date.now() + GENEROUS_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`waited ${GENEROUS_MS / 1000} s for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
