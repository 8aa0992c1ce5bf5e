import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../src/lib/redis-server.ts";
import { connectorEntry } from "./cli.ts";
import { service } from "./services.ts";

/** The connector's web role running as its own OS process. */
export interface WebRole {
  port: number;
  pid: number;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, the exit awaited, its data directory removed. */
  stop(): Promise<void>;
}

/**
 * Starts the web role alone (`--role web`) as the production entry runs it, on a free port,
 * with a SQLite file in a fresh directory, a Redis prefix of its own on the suite's redis-server
 * and a provider nobody answers; `env` adds to or overrides that. Resolves once it listens, so a
 * test can read its memory from /proc/<pid> while raw sockets talk to it; rejects with its
 * output if it exits first.
 */
export async function startWebRole(env: Record<string, string>): Promise<WebRole> {
  const dir = mkdtempSync(join(tmpdir(), "web-role-"));
  const port = await freePort();
  const child = spawn(process.execPath, connectorEntry("--role", "web"), {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PORT: String(port),
      APP_URL: `http://127.0.0.1:${port}`,
      REDIS_URL: service("redisUrl"),
      REDIS_PREFIX: `t-${randomUUID()}`,
      DATABASE_PATH: join(dir, "connector.sqlite"),
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      PROVIDER_AUTH_URL: "http://127.0.0.1:9",
      PROVIDER_AUDIENCE: "none",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  let output = "";
  const web: WebRole = {
    port,
    pid: child.pid ?? 0,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const seen = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('"web process listening"')) resolve();
      };
      child.stdout?.on("data", seen);
      child.stderr?.on("data", seen);
      void exited.then((code) => reject(new Error(`web role exited (${code}): ${output}`)));
    });
  } catch (error) {
    await web.stop();
    throw error;
  }
  return web;
}
