import { createHash } from "node:crypto";
import { ConfigError, type Env } from "./env.ts";

/**
 * The environment resolved into what the processes need, with the embedded defaults that make
 * `npm start` work on a fresh machine. In production the development fallbacks are refused:
 * a deployment must set its own secrets.
 */
export interface RuntimeConfig {
  env: Env;
  appUrl: string;
  shopifyApiKey: string;
  shopifyApiSecret: string;
  encryptionKey: string;
  /** Names of the values that fell back to development defaults, for a start-up warning. */
  devDefaults: string[];
}

const DEV_SHOPIFY_KEY = "dev-shopify-api-key";
const DEV_SHOPIFY_SECRET = "dev-shopify-api-secret";
/** A fixed development key: data sealed with it is only as secret as this repository. */
const DEV_ENCRYPTION_KEY = createHash("sha256")
  .update("order-sync-connector development key")
  .digest("base64");

export function resolveRuntimeConfig(env: Env): RuntimeConfig {
  const devDefaults: string[] = [];
  const pick = (name: keyof Env, value: string | undefined, fallback: string) => {
    if (value !== undefined) return value;
    devDefaults.push(name);
    return fallback;
  };
  const config: RuntimeConfig = {
    env,
    appUrl: env.APP_URL ?? `http://localhost:${env.PORT}`,
    shopifyApiKey: pick("SHOPIFY_API_KEY", env.SHOPIFY_API_KEY, DEV_SHOPIFY_KEY),
    shopifyApiSecret: pick("SHOPIFY_API_SECRET", env.SHOPIFY_API_SECRET, DEV_SHOPIFY_SECRET),
    encryptionKey: pick("ENCRYPTION_KEY", env.ENCRYPTION_KEY, DEV_ENCRYPTION_KEY),
    devDefaults,
  };
  if (env.NODE_ENV === "production" && devDefaults.length > 0) {
    throw new ConfigError(
      `invalid environment:\n${devDefaults.map((name) => `  ${name}: required in production`).join("\n")}`,
    );
  }
  return config;
}
