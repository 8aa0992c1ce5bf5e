/**
 * The connector's context as the benches need it: built from an environment, pointed at a
 * provider sandbox, with the given shops registered against it (the sandbox's credentials,
 * sealed as the install flow seals them).
 */

import { type Connector, createConnector } from "../src/app/connector.ts";
import { parseEnv } from "../src/config/env.ts";
import { resolveRuntimeConfig } from "../src/config/runtime-config.ts";
import { createLogger } from "../src/lib/logger.ts";
import { sealedFor } from "../src/lib/secret-box.ts";

export interface BenchProvider {
  baseUrl: string;
  authUrl: string;
  audience: string;
  clientId: string;
  clientSecret: string;
}

export async function benchContext(options: {
  env: Record<string, string>;
  redisUrl: string;
  prefix: string;
  provider: BenchProvider;
  shops: { shop: string; storeId: number }[];
}): Promise<Connector> {
  const { provider } = options;
  const ctx = createConnector({
    config: resolveRuntimeConfig(parseEnv(options.env)),
    logger: createLogger("silent"),
    redis: options.redisUrl,
    prefix: options.prefix,
    providerDefaults: {
      baseUrl: provider.baseUrl,
      authUrl: provider.authUrl,
      audience: provider.audience,
    },
  });
  await ctx.ready();
  for (const { shop, storeId } of options.shops) {
    await ctx.shops.upsertShop(shop, {
      storeId,
      providerClientId: provider.clientId,
      providerClientSecretSealed: ctx.secrets.seal(
        provider.clientSecret,
        sealedFor.providerClientSecret(shop),
      ),
      storeCurrency: "USD",
    });
  }
  return ctx;
}
