import { describe, expect, it } from "vitest";
import { ConfigError, parseEnv } from "../../src/config/env.ts";

describe("parseEnv", () => {
  it("fills the embedded defaults when nothing is set", () => {
    const env = parseEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.DATABASE_PATH).toBe("./data/connector.sqlite");
    expect(env.PROVIDER_RATE_LIMIT).toBe(100);
    expect(env.PROVIDER_RATE_WINDOW_MS).toBe(60_000);
    expect(env.REDIS_URL).toBeUndefined();
  });

  it("names every bad variable in one error", () => {
    let caught: unknown;
    try {
      parseEnv({
        PORT: "eighty",
        PROVIDER_BASE_URL: "https://api.example.com/v2",
        ENCRYPTION_KEY: "c2hvcnQ=",
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as Error).message;
    expect(message).toContain("PORT");
    expect(message).toContain("PROVIDER_BASE_URL: must end in /v1");
    expect(message).toContain("ENCRYPTION_KEY: must be 32 bytes");
  });

  it("accepts a 32-byte base64 key and treats empty strings as unset", () => {
    const key = Buffer.alloc(32, 7).toString("base64");
    const env = parseEnv({ ENCRYPTION_KEY: key, REDIS_URL: "" });
    expect(env.ENCRYPTION_KEY).toBe(key);
    expect(env.REDIS_URL).toBeUndefined();
  });
});
