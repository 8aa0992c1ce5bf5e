import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import { QUEUE } from "../../src/queue/names.ts";
import { collectOutput, stopChildren } from "../helpers/child-output.ts";
import { connectorEntry } from "../helpers/cli.ts";

/**
 * What an operator reads while Redis goes away under a running web and worker role, and comes
 * back: one line per role that names the cause and what happens, one when it is back, and no
 * stack traces nor a line per reconnect attempt of each queue and worker.
 */
const dir = mkdtempSync(join(tmpdir(), "redis-loss-"));
const children: ChildProcess[] = [];
let redis: RedisServerHandle | undefined;
afterAll(async () => {
  await stopChildren(children);
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The roles' queues, where the test also waits for their start-up chores. */
const PREFIX = "loss";

function startRole(role: "web" | "worker", redisUrl: string, port: number) {
  const child = spawn(process.execPath, connectorEntry("--role", role), {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      REDIS_URL: redisUrl,
      REDIS_PREFIX: PREFIX,
      PORT: String(port),
      DATABASE_PATH: join(dir, "links.sqlite"),
      SHOPIFY_API_SECRET: "redis-loss-test-secret",
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      PROVIDER_AUTH_URL: "http://127.0.0.1:9",
      PROVIDER_AUDIENCE: "none",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  return collectOutput(child);
}

/** Each line of a role's output that mentions Redis's state, by what it says. */
const lines = (out: string, pattern: RegExp) => out.split("\n").filter((l) => pattern.test(l));

describe("Redis lost under running roles", { timeout: 120_000 }, () => {
  it("says so once per role, waits, and says when it is back; no stack traces", async () => {
    mkdirSync(join(dir, "redis"));
    redis = await startRedisServer({ dir: join(dir, "redis") });
    const { port, url } = redis;
    const web = startRole("web", url, await freePort());
    const worker = startRole("worker", url, await freePort());
    // Both roles are up once each has said so, and their start-up chores are done: the web
    // role's check of webhook subscriptions, and the worker's first prune of provider events,
    // finished in Redis too. A chore caught by the outage reports its own failure (the prune
    // job's completion finds its job gone from the restarted, empty Redis: "Missing key for
    // job"), beside the two lines this test is about.
    await expect
      .poll(
        () =>
          /connector ready/.test(web.out()) &&
          /webhook subscriptions checked/.test(web.out()) &&
          /connector ready/.test(worker.out()) &&
          /provider event bodies past retention pruned/.test(worker.out()),
        { timeout: 60_000 },
      )
      .toBe(true);
    const maintenance = new Queue(QUEUE.maintenance, {
      connection: { host: "127.0.0.1", port },
      prefix: PREFIX,
    });
    try {
      await expect.poll(() => maintenance.getActiveCount(), { timeout: 30_000 }).toBe(0);
    } finally {
      await maintenance.close();
    }
    const before = { web: web.out().length, worker: worker.out().length };

    await redis.stop("SIGKILL");
    const outage = /is unreachable/;
    await expect
      .poll(() => lines(web.out(), outage).length + lines(worker.out(), outage).length, {
        timeout: 30_000,
      })
      .toBe(2);
    // Many reconnect attempts of every connection, each let in and dropped at once.
    let attempts = 0;
    const dropper = createServer((socket) => {
      attempts += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => dropper.listen(port, "127.0.0.1", resolve));
    await expect.poll(() => attempts, { timeout: 30_000 }).toBeGreaterThanOrEqual(20);
    await new Promise((resolve) => dropper.close(resolve));

    redis = await startRedisServer({ dir: join(dir, "redis"), port });
    const back = /is reachable again/;
    await expect
      .poll(() => lines(web.out(), back).length + lines(worker.out(), back).length, {
        timeout: 30_000,
      })
      .toBe(2);

    for (const role of [web, worker]) {
      const during = role.out().slice(before[role === web ? "web" : "worker"]);
      expect(lines(during, outage)).toHaveLength(1);
      expect(lines(during, outage)[0]).toContain(`REDIS_URL redis://127.0.0.1:${port}`);
      expect(lines(during, back)).toHaveLength(1);
      // Nothing else: no stack trace, no error line per queue, worker or attempt.
      expect(
        during.split("\n").filter((l) => l.trim() !== ""),
        during,
      ).toHaveLength(2);
    }
  });
});
