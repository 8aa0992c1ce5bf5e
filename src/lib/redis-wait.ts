import { connect as connectPlain } from "node:net";
import { connect as connectTls } from "node:tls";
import { Cluster, Redis, ReplyError } from "ioredis";
import type { Logger } from "pino";
import { ConfigError } from "../config/env.ts";
import { DeadlineError, withDeadline } from "./deadline.ts";
import { type Heartbeat, outageLines, ServiceLostError, waitUntilReachable } from "./outage.ts";
import {
  describeTarget,
  isClusterTarget,
  type RedisConnection,
  type RedisTarget,
  redisVariable,
} from "./redis-keys.ts";
import { certificateRefusal } from "./tls-refusal.ts";

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
  const variable = redisVariable(target);
  const service = {
    variable,
    where: describeTarget(target),
    startFix: `start Redis or point ${variable} at it`,
  };
  await waitUntilReachable(service, () => whyRedisUnreachable(target), options);
}

/**
 * One attempt to reach Redis: null when it answers, else why not (ECONNREFUSED, a timeout).
 * A Redis that answers but will not do (it refuses the credentials, it is not the kind of Redis
 * the setting says: a cluster's node as REDIS_URL, a standalone one as REDIS_CLUSTER_NODES)
 * throws a ConfigError instead: it is reachable, and no wait changes its answer.
 */
export async function whyRedisUnreachable(target: RedisTarget): Promise<string | null> {
  const probe = probeConnection(target);
  // The connection's own error (ECONNREFUSED, ENOTFOUND, Redis's NOAUTH) says more than the
  // closed connection that follows it.
  let socketError: NodeJS.ErrnoException | undefined;
  probe.on("error", (error: NodeJS.ErrnoException) => {
    socketError ??= error;
  });
  const ask = async (): Promise<string | null> => {
    await probe.connect();
    if (probe instanceof Cluster) {
      const info = String(await probe.cluster("INFO"));
      return /cluster_state:ok/.test(info)
        ? null
        : "the cluster's state is not ok (a master without its slots?)";
    }
    if ((await probe.ping()) !== "PONG") return "it did not answer PING";
    // ioredis selects REDIS_URL's database as it connects, and goes on in database 0 when the
    // server has no such database: asked again here, where its answer stops the start.
    if (probe.options.db) await probe.select(probe.options.db);
    // A node of a Redis Cluster answers PING, then MOVED for most keys: named now, not later
    // by every queue. A Redis that does not allow INFO (some managed ones) is taken as it is.
    const info = await probe.info("cluster").catch(() => "");
    if (/cluster_enabled:1/.test(info)) {
      throw new ConfigError(
        `REDIS_URL ${describeTarget(target)} is a node of a Redis Cluster: set REDIS_CLUSTER_NODES to the cluster's nodes (host:port,…) instead of REDIS_URL`,
      );
    }
    return null;
  };
  try {
    // A server that accepts the connection and answers nothing (stopped, frozen, behind a
    // partition) is bounded here: the connect timeout ends when the socket connects.
    return await withDeadline(ask(), ANSWER_MS, "the probe");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if (error instanceof DeadlineError) {
      return `it accepted the connection and gave no answer within ${ANSWER_MS / 1000} s`;
    }
    // A cluster client wraps its nodes' answers: the last node's error is the cause.
    const cause: NodeJS.ErrnoException =
      (socketError as { lastNodeError?: NodeJS.ErrnoException } | undefined)?.lastNodeError ??
      socketError ??
      (error as NodeJS.ErrnoException);
    const refused = refusal(target, cause);
    if (refused) throw refused;
    const variable = redisVariable(target);
    const why = cause.code ?? (error as NodeJS.ErrnoException).code ?? cause.message;
    const fix =
      certificateRefusal(cause, variable, {
        trust: "give its CA to the connector with NODE_EXTRA_CA_CERTS=/path/to/ca.pem",
      }) ?? (await otherProtocol(target, why));
    if (fix) throw new ConfigError(`${variable} ${describeTarget(target)}: ${fix}`);
    return why;
  } finally {
    probe.disconnect();
  }
}

/**
 * Redis's answers that no wait changes, as a ConfigError with the fix: NOAUTH (it requires a
 * password, none was given), WRONGPASS (a wrong user or password), a database REDIS_URL names and
 * the server does not have, and a Redis without cluster mode given as REDIS_CLUSTER_NODES. Other
 * answers (LOADING while it reads its data at start-up) are waited out. (A password given to a
 * Redis without one, ioredis only warns about.)
 */
function refusal(target: RedisTarget, error: unknown): ConfigError | null {
  if (!(error instanceof ReplyError)) return null;
  const message = String((error as Error).message);
  const code = message.split(" ")[0];
  const variable = redisVariable(target);
  const where = describeTarget(target);
  if (code === "NOAUTH" || code === "WRONGPASS") {
    const why =
      code === "NOAUTH"
        ? "requires a password, and none is given"
        : "refused the user or password given";
    const form = isClusterTarget(target)
      ? "redis://:PASSWORD@host:port as the first entry"
      : "redis://:PASSWORD@host:port";
    return new ConfigError(
      `${variable} ${where} ${why} (${code}): put the server's password in ${variable}, ${form} (or redis://USER:PASSWORD@host:port for an ACL user)`,
    );
  }
  if (/DB index is out of range/.test(message) && !isClusterTarget(target)) {
    const database = new URL(target).pathname.slice(1);
    return new ConfigError(
      `${variable} ${where}: the server has no database ${database} (${message}); give a number below the server's databases setting (16 unless set), or none`,
    );
  }
  if (/cluster support disabled/.test(message)) {
    return new ConfigError(
      `${variable} ${where} is a Redis without cluster mode (${message}): set REDIS_URL to it instead, or point ${variable} at a Redis Cluster's nodes`,
    );
  }
  return null;
}

/** Answers of a port where nothing listens, or of no host at all: no protocol to ask about. */
const NO_SERVER = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
const PROBE_MS = 2_000;
/** How long a Redis that accepted a connection has to answer it (the CLI's bound too). */
export const ANSWER_MS = 5_000;

/**
 * The fix when the port speaks the other protocol than the setting's scheme, or null. `redis://`
 * to a TLS port (a managed Redis's): the server drops the plain-text command (ECONNRESET);
 * `rediss://` to a plain port: the server waits for the end of a command line the handshake
 * never sends (ETIMEDOUT). Either is also what a restarting or unreachable Redis may answer, so
 * one more connection asks the port in the other protocol: a TLS handshake that completes (its
 * certificate unchecked: only the protocol is asked), or a plain PING that Redis answers. A
 * cluster's every seed is asked at once: the cause is the answer of whichever seed ioredis tried
 * last, and the first seed may be down (ECONNREFUSED) while the others speak TLS.
 */
async function otherProtocol(target: RedisTarget, why: string): Promise<string | null> {
  const cluster = isClusterTarget(target);
  if (!cluster && NO_SERVER.has(why)) return null;
  const variable = redisVariable(target);
  const seeds = seedNodes(target);
  const answers = await Promise.all(
    seeds.map(async (node) =>
      (
        node.tls
          ? await speaksPlainRedis(node.host, node.port)
          : await speaksTls(node.host, node.port)
      )
        ? node
        : null,
    ),
  );
  const node = answers.find((answer) => answer !== null);
  if (!node) return null;
  const where = cluster ? `the node ${node.host}:${node.port}` : "the port";
  if (!node.tls) {
    return `${where} speaks TLS, and ${variable} asks for plain text (${why}); write rediss:// instead of redis:// to connect over TLS`;
  }
  return `${where} speaks plain-text Redis, not TLS (${why}); write redis:// instead of rediss://, or give the server's TLS port`;
}

/** The servers the setting names: REDIS_URL's one, or every seed of REDIS_CLUSTER_NODES. */
function seedNodes(target: RedisTarget): { host: string; port: number; tls: boolean }[] {
  if (isClusterTarget(target)) {
    return target.nodes.map((node) => ({
      host: node.host ?? "localhost",
      port: node.port ?? 6379,
      tls: target.tls,
    }));
  }
  const url = new URL(target);
  return [
    {
      host: url.hostname.replace(/^\[(.*)\]$/, "$1") || "localhost",
      port: Number(url.port || 6379),
      tls: url.protocol === "rediss:",
    },
  ];
}

function speaksTls(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connectTls({ host, port, rejectUnauthorized: false, timeout: PROBE_MS });
    const end = (answer: boolean) => {
      socket.destroy();
      done(answer);
    };
    socket.once("secureConnect", () => end(true));
    socket.once("error", () => end(false));
    socket.once("timeout", () => end(false));
  });
}

function speaksPlainRedis(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connectPlain({ host, port, timeout: PROBE_MS });
    let answer = "";
    const end = (speaks: boolean) => {
      socket.destroy();
      done(speaks);
    };
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("latin1");
      // PONG, or an error reply: NOAUTH where it asks for a password, DENIED in protected mode.
      if (answer.includes("\r\n")) end(/^(\+PONG|-[A-Z]+ )/.test(answer));
      else if (answer.length > 512) end(false);
    });
    socket.once("error", () => end(false));
    socket.once("timeout", () => end(false));
    socket.once("end", () => end(false));
  });
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

/**
 * Tells the operator when a running process loses its Redis and when it has it back: one
 * warning line when the connection is lost (naming REDIS_URL, the cause and the fix), one line
 * when it is ready again. In between, ioredis reconnects by itself, work waits (a worker's jobs
 * stay in Redis; the receiver answers 503 and Shopify sends the webhook again), and queues and
 * workers do not report each failed attempt (`isConnectionError`).
 */
export function watchRedis(redis: RedisConnection, target: RedisTarget, logger: Logger): void {
  const variable = redisVariable(target);
  const outage = outageLines(logger, {
    variable,
    where: describeTarget(target),
    meanwhile:
      "work waits until it is back, and webhooks are answered 503 so that Shopify sends them again",
    fix: `start Redis or check ${variable}`,
  });
  let ready = redis.status === "ready";
  let cause: string | undefined;
  redis.on("error", (error: NodeJS.ErrnoException) => {
    cause ??= error.code ?? error.message;
  });
  // Not 'close': a connection closed on purpose (a CLI command ending, a shutdown) closes too,
  // but only a lost one is reconnected.
  redis.on("reconnecting", () => {
    if (!ready) return;
    ready = false;
    outage.lost(cause ?? "the connection closed");
  });
  redis.on("ready", () => {
    ready = true;
    cause = undefined;
    outage.back();
  });
}

/**
 * Whether an ioredis or BullMQ error is Redis being out of reach (refused, reset, timed out, the
 * connection closed) rather than a fault of its own: `watchRedis` reports that once per process,
 * and each command that needed Redis fails with it.
 */
export function isConnectionError(error: unknown): boolean {
  const e = error as NodeJS.ErrnoException | undefined;
  if (typeof e?.syscall === "string") return true;
  return /Connection is closed|Stream isn't writeable|max retries per request/i.test(
    e?.message ?? "",
  );
}

/**
 * Listens to a BullMQ queue's or worker's 'error' event, which it emits at every failed
 * reconnect attempt of its connection. Without a listener a queue prints each one with its stack
 * trace (BullMQ's fallback) and a worker's would crash the process. Redis being out of reach is
 * left to `watchRedis`; any other error goes to `report` (a queue's commands fail to their
 * callers, so a queue needs none).
 */
export function onQueueErrors(
  emitter: { on(event: "error", listener: (error: Error) => void): unknown },
  report?: (error: Error) => void,
): void {
  emitter.on("error", (error) => {
    if (!isConnectionError(error)) report?.(error);
  });
}

/**
 * A running CLI command's question to its Redis (`whileAnswering`): PING on `redis`, the
 * connection its queues use, or on each master of a cluster. A Redis that was killed leaves the
 * PING waiting while ioredis reconnects; its refusals (ECONNREFUSED) are the cause given.
 */
export function redisHeartbeat(redis: RedisConnection, target: RedisTarget): Heartbeat {
  const variable = redisVariable(target);
  let cause: string | undefined;
  redis.on("error", (error: NodeJS.ErrnoException & { lastNodeError?: NodeJS.ErrnoException }) => {
    const own = error.lastNodeError ?? error;
    cause = own.code ?? own.message;
  });
  redis.on("ready", () => {
    cause = undefined;
  });
  return {
    variable,
    where: describeTarget(target),
    fix: `start Redis or check ${variable}`,
    cause: () => cause,
    ping: async () => {
      if (!(redis instanceof Cluster)) return redis.ping();
      const masters = redis.nodes("master");
      if (masters.length === 0) throw new Error("no master of the cluster is known");
      return Promise.all(masters.map((node) => node.ping()));
    },
  };
}

/**
 * A command's failure that is Redis out of reach (a cluster's master killed: "Too many Cluster
 * redirections. Last error: … ECONNREFUSED"; a connection closed under it) as the one line
 * `redisHeartbeat` gives, or null for any other failure.
 */
export function redisLost(error: unknown, target: RedisTarget): ServiceLostError | null {
  const message = (error as Error | undefined)?.message ?? "";
  if (
    !/Too many Cluster redirections|Connection is closed|Stream isn't writeable|max retries per request|Failed to refresh slots cache/i.test(
      message,
    )
  ) {
    return null;
  }
  const own = (error as { lastNodeError?: NodeJS.ErrnoException }).lastNodeError;
  const cause = own?.code ?? /\b(E[A-Z]{3,})\b/.exec(message)?.[1] ?? message.replace(/\.$/, "");
  const variable = redisVariable(target);
  return new ServiceLostError(
    `${variable} ${describeTarget(target)} stopped answering during the command (${cause}): start Redis or check ${variable}, then run the command again`,
  );
}
