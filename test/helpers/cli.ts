import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { inject } from "vitest";
import type { Connector } from "../../src/app/connector.ts";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI (`node --import tsx src/cli/index.ts …`) in a child process against the
 * test's Redis (its key prefix) and SQLite file; `env` adds to (or overrides) its environment.
 */
export async function runCli(
  ctx: Connector,
  args: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["--import", "tsx", "src/cli/index.ts", ...args],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          REDIS_URL: inject("redisUrl"),
          REDIS_PREFIX: ctx.prefix,
          DATABASE_PATH: ctx.config.env.DATABASE_PATH,
          SHOPIFY_API_SECRET: ctx.config.shopifyApiSecret,
          LOG_LEVEL: "silent",
          ...env,
        },
        timeout: 60_000,
      },
    );
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
