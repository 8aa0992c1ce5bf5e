import { ConfigError } from "../config/env.ts";

/**
 * Loads a development tool (the provider sandbox, the stand-in Shopify). The production build
 * leaves them out (scripts/build.ts), so there the import fails and the operator is told what
 * to set instead; anything else that goes wrong while loading is not hidden.
 */
export async function loadDevTool<T>(
  name: string,
  load: () => Promise<T>,
  instead = "run it from a source checkout after `npm install`",
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new ConfigError(
      `${name} is a development tool and is not in the production build: ${instead}`,
    );
  }
}
