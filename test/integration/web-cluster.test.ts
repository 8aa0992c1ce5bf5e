import { type ChildProcess, spawn } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/lib/redis-server.ts";
import { QUEUE } from "../../src/queue/names.ts";
import { openDatabase, ShopRepository } from "../../src/store/index.ts";
import { connectorEntry } from "../helpers/cli.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { service } from "../helpers/services.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const SECRET = "cluster-test-secret";
const SHOP = "cluster-shop.myshopify.com";
const redis = new Redis(service("redisUrl"));
afterAll(() => redis.disconnect());

interface Role {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: string[];
  prefix: string;
  exited: Promise<number | null>;
  /** Resolves with the first log line that matches. */
  waitFor(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}
const roles: Role[] = [];
afterEach(async () => {
  for (const role of roles.splice(0)) {
    if (role.child.exitCode === null && role.child.signalCode === null) {
      role.child.kill("SIGTERM");
      await role.exited;
    }
  }
});

/** `src/main.ts --role web` (or another role) as its own OS process, on a fresh SQLite and prefix. */
async function startRole(args: string[], env: Record<string, string>): Promise<Role> {
  const dir = mkdtempSync(join(tmpdir(), "web-cluster-"));
  const databasePath = join(dir, "connector.sqlite");
  const db = openDatabase(databasePath);
  await new ShopRepository(db).upsertShop(SHOP, { storeId: 1001 });
  await db.close();
  const prefix = `t-${randomUUID()}`;
  const child = spawn(process.execPath, connectorEntry(...args), {
    env: {
      ...process.env,
      REDIS_URL: service("redisUrl"),
      REDIS_PREFIX: prefix,
      DATABASE_PATH: databasePath,
      SHOPIFY_API_SECRET: SECRET,
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      PROVIDER_AUTH_URL: "http://127.0.0.1:9",
      PROVIDER_AUDIENCE: "none",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  const waiters: {
    match: (l: Record<string, unknown>) => boolean;
    resolve: (l: Record<string, unknown>) => void;
  }[] = [];
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split("\n");
    buffer = parts.pop() ?? "";
    for (const text of parts.filter(Boolean)) {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text) as Record<string, unknown>;
      } catch {
        continue;
      }
      lines.push(line);
      for (const waiter of waiters.splice(0)) {
        if (waiter.match(line)) waiter.resolve(line);
        else waiters.push(waiter);
      }
    }
  });
  child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  const role: Role = {
    child,
    lines,
    stderr,
    prefix,
    exited,
    waitFor: (match) =>
      new Promise((resolve, reject) => {
        const seen = lines.find(match);
        if (seen) return resolve(seen);
        waiters.push({ match, resolve });
        void exited.then((code) => reject(new Error(`exited (${code}) first: ${stderr.join("")}`)));
      }),
  };
  roles.push(role);
  return role;
}

/** One signed orders/create webhook on a new connection (so the primary hands it to the next process). */
function sendWebhook(port: number, seq: number): Promise<{ status: number; body: string }> {
  const body = JSON.stringify(orderPayload(newModelOrder(seq, seq * 10)));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/webhooks/shopify",
        agent: false,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-shopify-topic": "orders/create",
          "x-shopify-hmac-sha256": createHmac("sha256", SECRET).update(body).digest("base64"),
          "x-shopify-shop-domain": SHOP,
          "x-shopify-api-version": "2026-10",
          "x-shopify-webhook-id": `w-${seq}`,
          "x-shopify-event-id": `e-${seq}`,
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => {
        text += c.toString();
      });
      res.on("end", () => resolve(text));
    })
      .on("error", reject)
      .end();
  });
}

const queuedCount = (metrics: string) =>
  Number(
    /connector_webhooks_received_total\{[^}]*outcome="queued"[^}]*\} (\d+)/.exec(metrics)?.[1] ??
      "0",
  );

describe("the web role with WEB_PROCESSES=2 (node:cluster)", { timeout: 90_000 }, () => {
  it("serves one port from two processes, each making webhooks durable, and sums their metrics", async () => {
    const metricsPort = await freePort();
    const role = await startRole(["--role", "web"], {
      WEB_PROCESSES: "2",
      PORT: "0",
      METRICS_PORT: String(metricsPort),
    });
    const ready = await role.waitFor((l) => l.msg === "web processes listening on one port");
    const port = ready.port as number;
    // Each web process logs its own line, which may reach the pipe after the primary's.
    const listening = () => role.lines.filter((l) => l.msg === "web process listening");
    await role.waitFor(() => listening().length >= 2);
    const workers = listening();
    expect(new Set(workers.map((l) => l.pid)).size).toBe(2);
    expect(workers.every((l) => l.port === port)).toBe(true);

    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => sendWebhook(port, 100 + i)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const queue = new Queue(QUEUE.sync, { connection: redis, prefix: role.prefix });
    expect(await queue.count()).toBe(20);
    await queue.close();

    // The primary's METRICS_PORT sums both processes; the web port answers for one of them.
    expect(queuedCount(await get(metricsPort, "/metrics"))).toBe(20);
    const one = queuedCount(await get(port, "/metrics"));
    expect(one).toBeGreaterThan(0);
    expect(one).toBeLessThan(20);

    role.child.kill("SIGTERM");
    expect(await role.exited).toBe(0);
  });

  it("replaces a web process that dies, and the port keeps answering", async () => {
    const role = await startRole(["--role", "web"], { WEB_PROCESSES: "2", PORT: "0" });
    const ready = await role.waitFor((l) => l.msg === "web processes listening on one port");
    const port = ready.port as number;
    const first = await role.waitFor((l) => l.msg === "web process listening");
    process.kill(first.pid as number, "SIGKILL");
    await role.waitFor((l) => l.msg === "a web process died; starting a replacement");
    // Two lines from the first processes, a third from the replacement.
    await role.waitFor(
      () => role.lines.filter((l) => l.msg === "web process listening").length >= 3,
    );
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => sendWebhook(port, 200 + i)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
  });

  it("stops the whole role, exit code 1, when its web processes cannot listen (port in use)", async () => {
    const taken = createServer();
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, () => resolve((taken.address() as AddressInfo).port)),
    );
    try {
      const role = await startRole(["--role", "web"], { WEB_PROCESSES: "2", PORT: String(port) });
      expect(await role.exited).toBe(1);
      expect(role.stderr.join("")).toContain("a web process exited before it listened");
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("refuses WEB_PROCESSES > 1 outside the web role, naming the variable", async () => {
    const role = await startRole(["--role", "all"], { WEB_PROCESSES: "2" });
    expect(await role.exited).toBe(2);
    expect(role.stderr.join("")).toMatch(/WEB_PROCESSES: 2 web processes need --role web/);
  });
});
