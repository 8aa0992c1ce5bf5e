import { Cluster, Redis } from "ioredis";
import type { Logger } from "pino";
import { ConfigError } from "../config/env.ts";
import { nextPause } from "./backoff.ts";
import { describeTarget, isClusterTarget, type RedisTarget } from "./redis-keys.ts";

/**
 * Waits until Redis answers PING, trying again with a growing pause (0.5 s doubling to 15 s,
 * the last one cut so that the last attempt falls on `giveUpAfterMs`)
 * and one warning line per attempt that names REDIS_URL. With `giveUpAfterMs` (the web role:
 * an orchestrator restarts it) it then stops with one line; without, it waits as long as it
 * takes (a worker has nothing to do without Redis).
 */
export async function waitForRedis(
  target: RedisTarget,
  options: { logger: Logger; giveUpAfterMs?: number },
): Promise<void> {
  const variable = isClusterTarget(target) ? "REDIS_CLUSTER_NODES" : "REDIS_URL";
  const where = describeTarget(target);
  const started = Date.now();
  let pause = 500;
  for (let attempt = 1; ; attempt++) {
    const probe = probeConnection(target);
    // The socket's own error (ECONNREFUSED, ENOTFOUND…) says more than the closed connection.
    let socketError: NodeJS.ErrnoException | undefined;
    probe.on("error", (error: NodeJS.ErrnoException) => {
      socketError ??= error;
    });
    let reason: string;
    try {
      await probe.connect();
      if (probe instanceof Cluster) {
        const info = String(await probe.cluster("INFO"));
        if (/cluster_state:ok/.test(info)) return;
        reason = "the cluster's state is not ok (a master without its slots?)";
      } else if ((await probe.ping()) === "PONG") {
        return;
      } else {
        reason = "it did not answer PING";
      }
    } catch (error) {
      reason =
        socketError?.code ?? (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    } finally {
      probe.disconnect();
    }
    const waited = Date.now() - started;
    const wait = nextPause(waited, pause, options.giveUpAfterMs);
    if (wait === null) {
      throw new ConfigError(
        `${variable} ${where} is unreachable (${reason}) after ${Math.round(waited / 1000)} s: start Redis or point ${variable} at it`,
      );
    }
    options.logger.warn(
      `${variable} ${where} is unreachable (${reason}); attempt ${attempt}, trying again in ${wait / 1000} s`,
    );
    await new Promise((resolve) => setTimeout(resolve, wait));
    pause = Math.min(pause * 2, 15_000);
  }
}

/** One connection attempt, no retries: a Redis, or a cluster client that fails once its slots cannot be read. */
function probeConnection(target: RedisTarget): Redis | Cluster {
  const once = {
    lazyConnect: true,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  };
  if (!isClusterTarget(target)) return new Redis(target, once);
  const { lazyConnect, enableOfflineQueue, retryStrategy, ...perNode } = once;
  return new Cluster(target.nodes, {
    lazyConnect,
    enableOfflineQueue,
    clusterRetryStrategy: () => null,
    slotsRefreshTimeout: 2_000,
    redisOptions: {
      ...perNode,
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    },
  });
}
