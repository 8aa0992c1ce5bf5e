import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { ConfigError } from "../../src/config/env.ts";
import { freePort, type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import { waitForRedis } from "../../src/lib/redis-wait.ts";
import { selfSignedCertificate } from "../helpers/certificate.ts";
import { cliEntry } from "../helpers/cli.ts";
import { service } from "../helpers/services.ts";

/**
 * A Redis that answers but will not do: one that requires a password (a managed Redis, one with
 * `requirepass`) and a REDIS_URL without it or with a wrong one, a standalone Redis given as a
 * cluster, a cluster's node given as one Redis. Redis answers, so none is "unreachable", and no
 * wait changes the answer: each stops the start at once with the cause and the fix. Before, the
 * first two were `is unreachable (…)` on every attempt (a worker's forever) with the fix "start
 * Redis", the CLI said `could not reach Redis within 5 s`, and the last one started and logged
 * MOVED from every queue.
 */
const PASSWORD = "correct-horse-battery";
const logger = pino({ level: "silent" });
let server: RedisServerHandle;
let port: number;
beforeAll(async () => {
  server = await startRedisServer();
  port = server.port;
  const admin = new Redis(server.url);
  await admin.config("SET", "requirepass", PASSWORD);
  admin.disconnect();
});
afterAll(() => server.stop());

const FIX =
  "put the server's password in REDIS_URL, redis://:PASSWORD@host:port (or redis://USER:PASSWORD@host:port for an ACL user)";

async function refusal(url: string): Promise<string> {
  // A worker waits for an unreachable Redis as long as it takes: the refusal must end it at once.
  const error = await waitForRedis(url, { logger }).then(
    () => null,
    (rejected: unknown) => rejected,
  );
  expect(error).toBeInstanceOf(ConfigError);
  return (error as Error).message;
}

describe("a Redis that refuses the connection's credentials", () => {
  it("stops the start-up wait at once with the cause and the fix, never the password", async () => {
    expect(await refusal(`redis://127.0.0.1:${port}`)).toBe(
      `REDIS_URL redis://127.0.0.1:${port} requires a password, and none is given (NOAUTH): ${FIX}`,
    );
    const wrong = await refusal(`redis://:not-it@127.0.0.1:${port}`);
    expect(wrong).toBe(
      `REDIS_URL redis://127.0.0.1:${port} refused the user or password given (WRONGPASS): ${FIX}`,
    );
    expect(wrong).not.toContain("not-it");
    await expect(
      waitForRedis(`redis://:${PASSWORD}@127.0.0.1:${port}`, { logger }),
    ).resolves.toBeUndefined();
  });

  it("is one line from a CLI command, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "redis-credentials-"));
    try {
      const run = await promisify(execFile)(process.execPath, [...cliEntry(), "status"], {
        cwd: resolve(import.meta.dirname, "../.."),
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "",
          REDIS_URL: `redis://127.0.0.1:${port}`,
          DATABASE_PATH: join(dir, "connector.sqlite"),
        },
      }).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => error,
      );
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(
        `connector: REDIS_URL redis://127.0.0.1:${port} requires a password, and none is given (NOAUTH): ${FIX}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a database REDIS_URL names and the server does not have", () => {
  it("stops the start-up wait at once, naming the setting that bounds it", async () => {
    // Before: ioredis's SELECT failed as it connected, and the connector went on in database 0.
    expect(await refusal(`redis://:${PASSWORD}@127.0.0.1:${port}/16`)).toBe(
      `REDIS_URL redis://127.0.0.1:${port}/16: the server has no database 16 (ERR DB index is out of range); give a number below the server's databases setting (16 unless set), or none`,
    );
    await expect(
      waitForRedis(`redis://:${PASSWORD}@127.0.0.1:${port}/15`, { logger }),
    ).resolves.toBeUndefined();
  });
});

describe("a Redis without cluster mode given as REDIS_CLUSTER_NODES", () => {
  it("stops the start-up wait at once, saying to use REDIS_URL", async () => {
    // Before: "is unreachable (None of startup nodes is available)", and "start Redis".
    const standalone = await startRedisServer();
    try {
      const target = { nodes: [{ host: "127.0.0.1", port: standalone.port }], tls: false };
      const error = await waitForRedis(target, { logger }).then(
        () => null,
        (rejected: unknown) => rejected,
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toBe(
        `REDIS_CLUSTER_NODES 127.0.0.1:${standalone.port} is a Redis without cluster mode (ERR This instance has cluster support disabled): set REDIS_URL to it instead, or point REDIS_CLUSTER_NODES at a Redis Cluster's nodes`,
      );
    } finally {
      await standalone.stop();
    }
  });
});

describe("a node of a Redis Cluster given as REDIS_URL", () => {
  it("stops the start-up wait at once, saying to use REDIS_CLUSTER_NODES", async () => {
    // Before: the process started, and every queue and worker logged MOVED, again and again.
    const [node] = service("redisClusterNodes").split(",");
    const error = await waitForRedis(`redis://${node}`, { logger }).then(
      () => null,
      (rejected: unknown) => rejected,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      `REDIS_URL redis://${node} is a node of a Redis Cluster: set REDIS_CLUSTER_NODES to the cluster's nodes (host:port,…) instead of REDIS_URL`,
    );
  });
});

describe("a Redis over TLS: a CA Node does not know, a scheme that does not match the port", () => {
  it("stops at once with the fix, and the CLI connects once the CA is given", async () => {
    // As a managed Redis's own CA: before, "unreachable (DEPTH_ZERO_SELF_SIGNED_CERT)" on every
    // attempt, a worker's forever.
    const dir = mkdtempSync(join(tmpdir(), "redis-tls-"));
    const { certificate, key } = selfSignedCertificate(dir);
    const tlsPort = await freePort();
    const tls = spawn(
      "redis-server",
      [
        "--port",
        "0",
        "--tls-port",
        String(tlsPort),
        "--bind",
        "127.0.0.1",
        "--tls-cert-file",
        certificate,
        "--tls-key-file",
        key,
        "--tls-auth-clients",
        "no",
        "--save",
        "",
        "--dir",
        dir,
      ],
      { stdio: "ignore" },
    );
    const stopped = new Promise((done) => tls.once("exit", done));
    onTestFinished(async () => {
      tls.kill("SIGKILL");
      await stopped;
      rmSync(dir, { recursive: true, force: true });
    });
    const cli = (url: string, env: NodeJS.ProcessEnv = {}) =>
      promisify(execFile)(process.execPath, [...cliEntry(), "status"], {
        cwd: resolve(import.meta.dirname, "../.."),
        env: {
          PATH: process.env.PATH ?? "",
          HOME: process.env.HOME ?? "",
          REDIS_URL: url,
          DATABASE_PATH: join(dir, "connector.sqlite"),
          ...env,
        },
      }).then(
        ({ stdout }) => ({ code: 0, stdout, stderr: "" }),
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
    // The server's TLS port answers once it listens: poll it with the CA given.
    await expect
      .poll(
        async () =>
          (await cli(`rediss://localhost:${tlsPort}`, { NODE_EXTRA_CA_CERTS: certificate })).code,
        {
          timeout: 20_000,
          interval: 200,
        },
      )
      .toBe(0);
    // The scheme that does not match the port: before, "unreachable (ECONNRESET)" and
    // "unreachable (ETIMEDOUT)" on every attempt, as if Redis were down.
    expect(await refusal(`redis://127.0.0.1:${tlsPort}`)).toBe(
      `REDIS_URL redis://127.0.0.1:${tlsPort}: the port speaks TLS, and REDIS_URL asks for plain text (ECONNRESET); write rediss:// instead of redis:// to connect over TLS`,
    );
    // The file's Redis is a plain one that asks for a password: it answers PING with NOAUTH.
    expect(await refusal(`rediss://127.0.0.1:${port}`)).toBe(
      `REDIS_URL rediss://127.0.0.1:${port}: the port speaks plain-text Redis, not TLS (ETIMEDOUT); write redis:// instead of rediss://, or give the server's TLS port`,
    );
    expect(await refusal(`rediss://127.0.0.1:${tlsPort}`)).toBe(
      `REDIS_URL rediss://127.0.0.1:${tlsPort}: the server's TLS certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); give its CA to the connector with NODE_EXTRA_CA_CERTS=/path/to/ca.pem`,
    );
    const untrusted = await cli(`rediss://localhost:${tlsPort}`);
    expect(untrusted.code).toBe(2);
    expect(untrusted.stderr.trim()).toBe(
      `connector: REDIS_URL rediss://localhost:${tlsPort}: the server's TLS certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT); give its CA to the connector with NODE_EXTRA_CA_CERTS=/path/to/ca.pem`,
    );
    const anotherHost = await cli(`rediss://127.0.0.1:${tlsPort}`, {
      NODE_EXTRA_CA_CERTS: certificate,
    });
    expect(anotherHost.code).toBe(2);
    expect(anotherHost.stderr.trim()).toBe(
      `connector: REDIS_URL rediss://127.0.0.1:${tlsPort}: the server's TLS certificate is for another host name (ERR_TLS_CERT_ALTNAME_INVALID); put a host name it names in REDIS_URL`,
    );
    const trusted = await cli(`rediss://localhost:${tlsPort}`, {
      NODE_EXTRA_CA_CERTS: certificate,
    });
    expect(trusted.stderr).toBe("");
    expect(trusted.code).toBe(0);
    // The queues read over TLS.
    expect(trusted.stdout).toMatch(/^ {2}sync +waiting 0, active 0/m);

    // A cluster whose first seed is down and whose others speak the other protocol: every seed
    // is asked, not the first alone. Before, "is unreachable (…)" with the answer of whichever
    // seed ioredis tried last, and "start Redis", as if the cluster were down.
    const down = await freePort();
    const seedsRefusal = async (target: {
      nodes: { host: string; port: number }[];
      tls: boolean;
    }) => {
      const error = await waitForRedis(target, { logger, giveUpAfterMs: 1 }).then(
        () => null,
        (rejected: unknown) => rejected,
      );
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    };
    const seeds = (...ports: number[]) => ports.map((p) => ({ host: "127.0.0.1", port: p }));
    expect(await seedsRefusal({ nodes: seeds(down, tlsPort), tls: false })).toMatch(
      new RegExp(
        `^REDIS_CLUSTER_NODES 127\\.0\\.0\\.1:${down},127\\.0\\.0\\.1:${tlsPort}: the node 127\\.0\\.0\\.1:${tlsPort} speaks TLS, and REDIS_CLUSTER_NODES asks for plain text \\([^)]+\\); write rediss:// instead of redis:// to connect over TLS$`,
      ),
    );
    expect(await seedsRefusal({ nodes: seeds(down, port), tls: true })).toMatch(
      new RegExp(
        `^REDIS_CLUSTER_NODES 127\\.0\\.0\\.1:${down},127\\.0\\.0\\.1:${port}: the node 127\\.0\\.0\\.1:${port} speaks plain-text Redis, not TLS \\([^)]+\\); write redis:// instead of rediss://, or give the server's TLS port$`,
      ),
    );
  });
});
