import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import type { Connector } from "../../src/app/connector.ts";
import { service } from "./services.ts";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The arguments that start the real CLI with `process.execPath`: the bundle the global setup
 * builds from this checkout's sources (`node <bundle> …`), so that a child starts in about half
 * a second rather than loading every module through the TypeScript loader.
 */
export function cliEntry(): string[] {
  return [service("cliBundle")];
}

/**
 * The arguments that start the connector's process (`src/main.ts`, as `npm start` runs it) with
 * `process.execPath`: the bundle the global setup builds from this checkout's sources, for the
 * same reason as `cliEntry`. `args` are the process's own (`--role worker`).
 */
export function connectorEntry(...args: string[]): string[] {
  return [service("mainBundle"), ...args];
}

/**
 * Runs the real CLI (`cliEntry()`) in a child process against the test's Redis (its key prefix;
 * the run's Redis Cluster when the context is on it) and database (its SQLite file, or its
 * Postgres database); `env` adds to (or overrides) its environment.
 */
export async function runCli(
  ctx: Connector,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...cliEntry(), ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        ...(ctx.config.env.REDIS_CLUSTER_NODES
          ? { REDIS_CLUSTER_NODES: service("redisClusterNodes") }
          : { REDIS_URL: service("redisUrl") }),
        REDIS_PREFIX: ctx.prefix,
        ...(ctx.config.env.DATABASE_URL
          ? { DATABASE_URL: ctx.config.env.DATABASE_URL }
          : { DATABASE_PATH: ctx.config.env.DATABASE_PATH }),
        SHOPIFY_API_SECRET: ctx.config.shopifyApiSecret,
        LOG_LEVEL: "silent",
        ...env,
      },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof e.code === "number" ? e.code : 1,
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? "",
    };
  }
}
