import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxFaults } from "@connector/provider-sandbox";
import type { Arrival } from "@connector/provider-sandbox/app.ts";
import type { StoredOrder } from "@connector/provider-sandbox/orders.ts";
import { Redis, Cluster as RedisCluster } from "ioredis";
import {
  freePort,
  type RedisServerHandle,
  startRedisServer,
} from "../../../src/lib/redis-server.ts";
import { createSecretBox, sealedFor } from "../../../src/lib/secret-box.ts";
import { OrderQueues } from "../../../src/queue/order-queues.ts";
import { openDatabase, ShopRepository } from "../../../src/store/index.ts";
import { pendingSyncJobs } from "../../helpers/pending-jobs.ts";
import { type PostgresHandle, startPostgres } from "../../helpers/postgres.ts";
import { type RedisClusterHandle, startRedisCluster } from "../../helpers/redis-cluster.ts";
import { killOnHarnessExit, ManagedProcess, sleep } from "./processes.ts";

export interface ClusterOptions {
  /** Worker processes. */
  workers: number;
  /** Jobs per worker process at once. */
  workerConcurrency?: number;
  /** Shops, each on its own provider store. */
  shops?: number;
  appendfsync?: "always" | "everysec";
  /**
   * A Redis Cluster (three masters, one replica each, AOF with `appendfsync`) instead of one
   * redis-server: the connector gets REDIS_CLUSTER_NODES.
   */
  redisCluster?: boolean;
  /** The link store: the shared SQLite file (default), or a private Postgres server. */
  database?: "sqlite" | "postgres";
  /**
   * Groups of processes standing for hosts, each a web process (on its own port) and `workers`
   * worker processes; webhooks go to the live web processes in turn, as a load balancer would.
   */
  hosts?: number;
  /** The provider's budget per store (the connector is told the same). */
  rateLimit?: number;
  rateWindowMs?: number;
  /** Extra environment for the connector processes. */
  env?: Record<string, string>;
}

export interface SandboxSnapshot {
  orders: StoredOrder[];
  counters: {
    tokenRequests: number;
    rateLimited: number;
    faults: number;
    faultsByKind: { error: number; slow: number; drop: number; extra429: number };
    writes: Record<string, number>;
  };
  arrivals: Arrival[];
}

export const CHAOS_SHOPIFY_SECRET = `shpss_chaos_${randomBytes(12).toString("hex")}`;
export const CHAOS_PROVIDER_SECRET = `chaos-provider-${randomBytes(12).toString("hex")}`;
const ENCRYPTION_KEY = randomBytes(32).toString("base64");

/**
 * A whole deployment as real processes on loopback: redis-server (AOF on, the fsync policy of
 * the scenario), the provider sandbox (`connector sandbox --control`), one web process and
 * several worker processes (`src/main.ts --role …`), sharing one SQLite file. Each can be
 * killed and restarted by the scenario.
 */
export class Cluster {
  readonly dir: string;
  readonly shops: { shop: string; storeId: number }[];
  readonly webPort: number;
  /** Every host's web port (the first is `webPort`). */
  readonly webPorts: number[];
  readonly sandboxPort: number;
  readonly prefix = "chaos";
  redis!: RedisServerHandle;
  /** With `redisCluster`: the cluster, whose nodes a scenario kills and fails over. */
  redisCluster?: RedisClusterHandle;
  /** With `database: "postgres"`: the server, which a scenario kills and restarts. */
  postgres?: PostgresHandle;
  /** Each host's web process (the first is `web`). */
  webs: ManagedProcess[] = [];
  /** Which host each worker belongs to. */
  readonly hostOf = new Map<ManagedProcess, number>();
  #turn = 0;
  /** Every web process started, killed ones included (their logs are scanned too). */
  #allWebs: ManagedProcess[] = [];
  sandbox!: ManagedProcess;
  web!: ManagedProcess;
  workers: ManagedProcess[] = [];
  #redisPort = 0;
  #serial = 0;
  #harnessRedis?: Redis | RedisCluster;
  #queues?: OrderQueues;

  private constructor(
    readonly options: ClusterOptions,
    ports: { web: number[]; sandbox: number },
  ) {
    this.dir = mkdtempSync(join(tmpdir(), "connector-chaos-"));
    mkdirSync(join(this.dir, "logs"));
    mkdirSync(join(this.dir, "redis"));
    this.webPorts = ports.web;
    this.webPort = ports.web[0] as number;
    this.sandboxPort = ports.sandbox;
    this.shops = Array.from({ length: options.shops ?? 2 }, (_, i) => ({
      shop: `chaos-${i + 1}.myshopify.com`,
      storeId: 1001 + i,
    }));
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    const web: number[] = [];
    for (let i = 0; i < (options.hosts ?? 1); i++) web.push(await freePort());
    const cluster = new Cluster(options, { web, sandbox: await freePort() });
    try {
      await cluster.#startAll();
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** A live web process's URL, in turn (the first host's when only one runs). */
  get webUrl(): string {
    const live = this.webPorts.filter((_, host) => this.webs[host]?.alive ?? host === 0);
    const port = live.length > 0 ? live[this.#turn++ % live.length] : this.webPort;
    return `http://127.0.0.1:${port}`;
  }
  get sandboxUrl(): string {
    return `http://127.0.0.1:${this.sandboxPort}`;
  }
  get logDir(): string {
    return join(this.dir, "logs");
  }

  async #startAll() {
    await this.startRedis();
    if (this.options.database === "postgres") this.postgres = await startPostgres();
    this.sandbox = new ManagedProcess(
      "sandbox",
      [
        "src/cli/index.ts",
        "sandbox",
        "--control",
        "--port",
        String(this.sandboxPort),
        "--client-id",
        "chaos-client",
        "--client-secret",
        CHAOS_PROVIDER_SECRET,
        "--stores",
        this.shops.map((s) => s.storeId).join(","),
        "--rate-limit",
        String(this.options.rateLimit ?? 60_000),
        "--window-ms",
        String(this.options.rateWindowMs ?? 60_000),
        "--registrations",
        "0",
      ],
      { LOG_LEVEL: "warn" },
      join(this.logDir, "sandbox.log"),
    );
    await this.sandbox.waitFor(/provider sandbox running/, 120_000);
    await this.#registerShops();
    for (let host = 0; host < (this.options.hosts ?? 1); host++) await this.startHost(host);
  }

  /** One host: its web process and its workers. */
  async startHost(host: number): Promise<void> {
    await this.startWeb(host);
    await Promise.all(Array.from({ length: this.options.workers }, () => this.startWorker(host)));
  }

  /** kill -9 of every process of one host at once, as a lost machine. */
  async killHost(host: number): Promise<void> {
    const victims = [
      this.webs[host],
      ...this.workers.filter((w) => this.hostOf.get(w) === host),
    ].filter((p): p is ManagedProcess => p?.alive === true);
    await Promise.all(victims.map((p) => p.kill("SIGKILL")));
  }

  /** (Re)starts redis-server on the same port and directory, so its AOF is replayed. */
  async startRedis(): Promise<void> {
    if (this.options.redisCluster) {
      this.redisCluster = await startRedisCluster({
        replicas: 1,
        appendfsync: this.options.appendfsync ?? "always",
      });
      return;
    }
    this.redis = await startRedisServer({
      appendonly: true,
      appendfsync: this.options.appendfsync ?? "everysec",
      dir: join(this.dir, "redis"),
      ...(this.#redisPort ? { port: this.#redisPort } : {}),
    });
    this.#redisPort = this.redis.port;
    killOnHarnessExit(this.redis.process);
  }

  get redisUrl(): string {
    return `redis://127.0.0.1:${this.#redisPort}`;
  }

  /** The environment every connector process gets. */
  connectorEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      NODE_ENV: "development",
      PORT: String(this.webPort),
      APP_URL: this.webUrl,
      // On the cluster, the sync queue in three shards, one per master (SYNC_QUEUE_SHARDS).
      ...(this.redisCluster
        ? { REDIS_CLUSTER_NODES: this.redisCluster.seeds, SYNC_QUEUE_SHARDS: "3" }
        : { REDIS_URL: this.redisUrl }),
      REDIS_PREFIX: this.prefix,
      ...(this.postgres
        ? { DATABASE_URL: this.postgres.url }
        : { DATABASE_PATH: join(this.dir, "connector.sqlite") }),
      SHOPIFY_API_KEY: "chaos-api-key",
      SHOPIFY_API_SECRET: CHAOS_SHOPIFY_SECRET,
      ENCRYPTION_KEY,
      PROVIDER_BASE_URL: `${this.sandboxUrl}/v1`,
      PROVIDER_AUTH_URL: this.sandboxUrl,
      PROVIDER_AUDIENCE: "https://api.sandbox.local/v1",
      PROVIDER_RATE_LIMIT: String(this.options.rateLimit ?? 60_000),
      PROVIDER_RATE_WINDOW_MS: String(this.options.rateWindowMs ?? 60_000),
      WORKER_CONCURRENCY: String(this.options.workerConcurrency ?? 8),
      SYNC_ATTEMPTS: "25",
      SYNC_RETRY_DELAY_MS: "200",
      WORKER_LOCK_MS: "5000",
      LOG_LEVEL: "info",
      ...this.options.env,
      ...extra,
    };
  }

  async #registerShops() {
    const db = openDatabase(this.postgres?.url ?? join(this.dir, "connector.sqlite"));
    await db.ready();
    const shops = new ShopRepository(db);
    const box = createSecretBox(ENCRYPTION_KEY);
    for (const { shop, storeId } of this.shops) {
      await shops.upsertShop(shop, {
        storeId,
        providerClientId: "chaos-client",
        providerClientSecretSealed: box.seal(
          CHAOS_PROVIDER_SECRET,
          sealedFor.providerClientSecret(shop),
        ),
        storeCurrency: "USD",
        shopCurrency: "USD",
        locationMap: { "4001": 77 },
        protectionVariantIds: ["999"],
        installedAt: new Date().toISOString(),
      });
    }
    await db.close();
  }

  async startWeb(host = 0): Promise<void> {
    const port = this.webPorts[host] as number;
    const web = new ManagedProcess(
      `web-${++this.#serial}`,
      ["src/main.ts", "--role", "web"],
      this.connectorEnv({ PORT: String(port) }),
      join(this.logDir, `web-${this.#serial}.log`),
    );
    this.webs[host] = web;
    if (host === 0) this.web = web;
    this.#allWebs.push(web);
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (!web.alive) throw new Error(`web exited: ${web.log().slice(-2_000)}`);
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error("web process did not become healthy");
      await sleep(100);
    }
  }

  async startWorker(host = 0): Promise<ManagedProcess> {
    const worker = new ManagedProcess(
      `worker-${++this.#serial}`,
      ["src/main.ts", "--role", "worker"],
      this.connectorEnv(),
      join(this.logDir, `worker-${this.#serial}.log`),
    );
    this.workers.push(worker);
    this.hostOf.set(worker, host);
    // A cold tsx start on a loaded 2-core machine can take tens of seconds.
    await worker.waitFor(/sync worker running/, 120_000);
    return worker;
  }

  /** kill -9 of one running worker (started and serving), chosen by `pick`. */
  async killWorker(pick: number): Promise<ManagedProcess | undefined> {
    const live = this.workers.filter((w) => w.alive && w.ready);
    const victim = live[pick % Math.max(1, live.length)];
    await victim?.kill("SIGKILL");
    return victim;
  }

  // -- the sandbox's control API --------------------------------------------------------------
  async sandboxState(): Promise<SandboxSnapshot> {
    const response = await fetch(`${this.sandboxUrl}/_sandbox/state`);
    if (!response.ok) throw new Error(`sandbox state: ${response.status}`);
    return (await response.json()) as SandboxSnapshot;
  }

  async setFaults(faults: SandboxFaults): Promise<void> {
    const response = await fetch(`${this.sandboxUrl}/_sandbox/faults`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(faults),
    });
    if (!response.ok) throw new Error(`sandbox faults: ${await response.text()}`);
  }

  /** Another client spends `count` of a store's budget: the next requests get real 429s. */
  async consumeBudget(storeId: number, count: number): Promise<void> {
    const response = await fetch(`${this.sandboxUrl}/_sandbox/consume`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ storeId, count }),
    });
    if (!response.ok) throw new Error(`sandbox consume: ${await response.text()}`);
  }

  // -- the queues, read from the harness -------------------------------------------------------
  #queue() {
    if (!this.#queues) {
      const connection = this.redisCluster
        ? new RedisCluster(this.redisCluster.nodes, {
            redisOptions: { maxRetriesPerRequest: null },
            retryDelayOnFailover: 200,
            retryDelayOnClusterDown: 200,
          })
        : new Redis(this.redisUrl, { maxRetriesPerRequest: null });
      connection.on("error", () => {});
      this.#harnessRedis = connection;
      const shards = this.options.env?.SYNC_QUEUE_SHARDS ?? (this.redisCluster ? "3" : "1");
      this.#queues = new OrderQueues(connection, this.prefix, {}, { syncShards: Number(shards) });
    }
    return this.#queues;
  }

  /** Jobs waiting or running in every sync shard (of every shard count still recorded). */
  async pendingJobs(): Promise<number> {
    return pendingSyncJobs(this.#queue(), { fresh: true });
  }

  /** The dead letters waiting for an operator (sync jobs are removed as they finish). */
  async jobCounts() {
    const deadLetters = await this.#queue().deadLetter.getJobs([
      "waiting",
      "delayed",
      "prioritized",
    ]);
    return {
      deadLetters: deadLetters.map(
        (j) => j.data as { orderId: string | null; reason: string; category: string },
      ),
    };
  }

  /** Waits until the sync queue has been empty for `quietMs` (work may still be delayed). */
  async quiesce(timeoutMs = 120_000, quietMs = 1_500): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let quietSince = 0;
    while (Date.now() < deadline) {
      const pending = await this.pendingJobs();
      if (pending === 0) {
        quietSince ||= Date.now();
        if (Date.now() - quietSince >= quietMs) return;
      } else {
        quietSince = 0;
      }
      await sleep(250);
    }
    throw new Error(
      `the sync queue did not drain within ${timeoutMs} ms (${await this.pendingJobs()} pending)`,
    );
  }

  /**
   * The logs of every connector process the cluster started (web and workers, killed ones
   * included). The sandbox's own output is left out: it prints its credentials on purpose.
   */
  connectorLogs(): { name: string; text: string }[] {
    return [...this.#allWebs, ...this.workers]
      .filter(Boolean)
      .map((p) => ({ name: p.name, text: p.log() }));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop(5_000)));
    await Promise.all(this.webs.map((w) => w.stop(5_000)));
    await this.sandbox?.stop(5_000);
    if (this.#queues) {
      await this.#queues.close().catch(() => {});
    }
    this.#harnessRedis?.disconnect();
    await this.redis?.stop();
    await this.redisCluster?.stop();
    await this.postgres?.stop();
    if (!process.env.CHAOS_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }
}
