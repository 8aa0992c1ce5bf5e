import { Redis } from "ioredis";
import type { Logger } from "pino";
import { ConfigError } from "../config/env.ts";

/** The URL without its password, for a log line. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}

/**
 * Waits until Redis answers PING, trying again with a growing pause (0.5 s doubling to 15 s)
 * and one warning line per attempt that names REDIS_URL. With `giveUpAfterMs` (the web role:
 * an orchestrator restarts it) it then stops with one line; without, it waits as long as it
 * takes (a worker has nothing to do without Redis).
 */
export async function waitForRedis(
  url: string,
  options: { logger: Logger; giveUpAfterMs?: number; variable?: string },
): Promise<void> {
  const variable = options.variable ?? "REDIS_URL";
  const started = Date.now();
  let pause = 500;
  for (let attempt = 1; ; attempt++) {
    const probe = new Redis(url, {
      lazyConnect: true,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
    });
    // The socket's own error (ECONNREFUSED, ENOTFOUND…) says more than the closed connection.
    let socketError: NodeJS.ErrnoException | undefined;
    probe.on("error", (error: NodeJS.ErrnoException) => {
      socketError ??= error;
    });
    let reason: string;
    try {
      await probe.connect();
      if ((await probe.ping()) === "PONG") return;
      reason = "it did not answer PING";
    } catch (error) {
      reason =
        socketError?.code ?? (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    } finally {
      probe.disconnect();
    }
    const waited = Date.now() - started;
    if (options.giveUpAfterMs !== undefined && waited + pause > options.giveUpAfterMs) {
      throw new ConfigError(
        `${variable} ${redactedUrl(url)} is unreachable (${reason}) after ${Math.round(waited / 1000)} s: start Redis or point ${variable} at it`,
      );
    }
    options.logger.warn(
      `${variable} ${redactedUrl(url)} is unreachable (${reason}); attempt ${attempt}, trying again in ${pause / 1000} s`,
    );
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 15_000);
  }
}
