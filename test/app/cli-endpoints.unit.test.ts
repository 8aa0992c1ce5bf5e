import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolveProviderEndpoints } from "../../src/app/cli.ts";
import { sandboxEndpointsFile } from "../../src/app/infrastructure.ts";
import { parseEnv } from "../../src/config/env.ts";
import type { RuntimeConfig } from "../../src/config/runtime-config.ts";

const dir = mkdtempSync(join(tmpdir(), "cli-endpoints-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DATABASE_PATH = join(dir, "connector.sqlite");
const SANDBOX = {
  baseUrl: "http://127.0.0.1:3001/v1",
  authUrl: "http://127.0.0.1:3001",
  audience: "sandbox",
};
/** Only `env` is read; the rest of the config does not matter here. */
const config = (vars: Record<string, string>) =>
  ({ env: parseEnv({ DATABASE_PATH, ...vars }) }) as RuntimeConfig;

describe("the provider the CLI's product commands call", () => {
  it("is PROVIDER_BASE_URL when set, else the sandbox a running npm start wrote down", () => {
    expect(resolveProviderEndpoints(config({}))).toBeNull();
    writeFileSync(sandboxEndpointsFile(DATABASE_PATH), JSON.stringify(SANDBOX));
    expect(resolveProviderEndpoints(config({}))).toEqual(SANDBOX);
    expect(
      resolveProviderEndpoints(
        config({
          PROVIDER_BASE_URL: "https://api.example.com/v1",
          PROVIDER_AUTH_URL: "https://auth.example.com",
          PROVIDER_AUDIENCE: "https://api.example.com",
        }),
      ),
    ).toEqual({
      baseUrl: "https://api.example.com/v1",
      authUrl: "https://auth.example.com",
      audience: "https://api.example.com",
    });
  });

  it("never reads the sandbox's file in production", () => {
    writeFileSync(sandboxEndpointsFile(DATABASE_PATH), JSON.stringify(SANDBOX));
    expect(resolveProviderEndpoints(config({ NODE_ENV: "production" }))).toBeNull();
  });
});
