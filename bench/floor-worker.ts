/**
 * The floor for bench:worker: a BullMQ worker that does, per job, the external work any
 * exactly-once connector must do for a new one-line order, and nothing else. No mapping, no
 * validation, no metrics, no logs, no retry or reconciliation logic:
 * - the order's body read from Redis (GET), as the connector reads the webhook's snapshot;
 * - one Lua script on the store's budget key (INCR, PEXPIRE), as a limiter shared by every
 *   process needs at least one round trip before each call;
 * - the intent committed before the call (SQLite or Postgres, as the connector's row), so a
 *   crash after it is not a duplicate;
 * - the POST to the provider sandbox (undici `request`, keep-alive), its JSON answer parsed;
 * - the link and the intent's completion committed in one transaction.
 * Each step is done plainly: one commit per write on SQLite (no group commit), one statement per
 * round trip on Postgres (no pipelining). Its CPU per job is what the connector's own code adds
 * on top of. The bodies are mapped by the bench (the parent process) before the run, so the
 * provider accepts them.
 *
 * Arguments come from the environment: REDIS_URL, PREFIX, DATABASE_PATH or DATABASE_URL,
 * PROVIDER_BASE_URL, PROVIDER_AUTH_URL, PROVIDER_AUDIENCE, PROVIDER_CLIENT_ID and
 * PROVIDER_CLIENT_SECRET.
 */
import Database from "better-sqlite3";
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { Agent, request } from "undici";
import { QUEUE } from "../src/queue/names.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`floor worker: ${name} is not set`);
  return value;
};
const prefix = env("PREFIX");
const base = env("PROVIDER_BASE_URL").replace(/\/$/, "");

const tokenAnswer = await request(`${env("PROVIDER_AUTH_URL").replace(/\/$/, "")}/oauth/token`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({
    grant_type: "client_credentials",
    client_id: env("PROVIDER_CLIENT_ID"),
    client_secret: env("PROVIDER_CLIENT_SECRET"),
    audience: env("PROVIDER_AUDIENCE"),
  }),
});
const { access_token: token } = (await tokenAnswer.body.json()) as { access_token: string };
const headers = {
  authorization: `Bearer ${token}`,
  accept: "application/json",
  "content-type": "application/json",
};
const dispatcher = new Agent({ keepAliveTimeout: 4_000 });

/** The two writes, on SQLite (DATABASE_PATH) or on Postgres (DATABASE_URL). */
interface Store {
  intent(shop: string, id: string): Promise<void> | void;
  link(shop: string, id: string, orderId: number): Promise<void> | void;
}
const TABLES = `
  CREATE TABLE IF NOT EXISTS intents (
    shop TEXT NOT NULL, source_order_id TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (shop, source_order_id));
  CREATE TABLE IF NOT EXISTS links (
    shop TEXT NOT NULL, source_order_id TEXT NOT NULL, order_id BIGINT NOT NULL,
    PRIMARY KEY (shop, source_order_id));
`;
const INSERT_INTENT =
  "INSERT INTO intents (shop, source_order_id, state) VALUES ($1, $2, 'pending')";
const INSERT_LINK = "INSERT INTO links (shop, source_order_id, order_id) VALUES ($1, $2, $3)";
const COMPLETE_INTENT =
  "UPDATE intents SET state = 'done' WHERE shop = $1 AND source_order_id = $2";

async function openStore(): Promise<Store> {
  const url = process.env.DATABASE_URL;
  if (url) {
    // Named statements, as the connector's: each pooled connection plans them once.
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    await pool.query(TABLES);
    return {
      async intent(shop, id) {
        await pool.query({ name: "intent", text: INSERT_INTENT, values: [shop, id] });
      },
      async link(shop, id, orderId) {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await client.query({ name: "link", text: INSERT_LINK, values: [shop, id, orderId] });
          await client.query({ name: "complete", text: COMPLETE_INTENT, values: [shop, id] });
          await client.query("COMMIT");
        } finally {
          client.release();
        }
      },
    };
  }
  const db = new Database(env("DATABASE_PATH"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec(TABLES);
  const sqlite = (text: string) => db.prepare(text.replace(/\$\d/g, "?"));
  const insertIntent = sqlite(INSERT_INTENT);
  const insertLink = sqlite(INSERT_LINK);
  const completeIntent = sqlite(COMPLETE_INTENT);
  const recordLink = db.transaction((shop: string, id: string, orderId: number) => {
    insertLink.run(shop, id, orderId);
    completeIntent.run(shop, id);
  });
  return {
    intent: (shop, id) => void insertIntent.run(shop, id),
    link: (shop, id, orderId) => recordLink(shop, id, orderId),
  };
}
const store = await openStore();

// The bodies and the budget: short commands, auto-pipelined as the connector's own are.
const side = new Redis(env("REDIS_URL"), { enableAutoPipelining: true });
side.defineCommand("spend", {
  numberOfKeys: 1,
  lua: "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], 60000) end return n",
});
const spend = (key: string) =>
  (side as unknown as { spend(k: string): Promise<number> }).spend(key);

const connection = new Redis(env("REDIS_URL"), { maxRetriesPerRequest: null });
const worker = new Worker(
  QUEUE.sync,
  async (job: { data: { shop: string; orderId: string; storeId: number } }) => {
    const { shop, orderId, storeId } = job.data;
    const body = await side.get(`${prefix}:floor-body:${shop}:${orderId}`);
    if (!body) throw new Error(`no body for ${shop} ${orderId}`);
    await spend(`${prefix}:floor-budget:${storeId}`);
    await store.intent(shop, orderId);
    const answer = await request(`${base}/orders`, { method: "POST", headers, body, dispatcher });
    // 201 or 200, the order bare or wrapped (docs/provider-contract.md).
    const created = (await answer.body.json()) as {
      orderId?: number;
      order?: { orderId?: number };
    };
    const providerId = created.order?.orderId ?? created.orderId;
    if (answer.statusCode >= 300 || typeof providerId !== "number") {
      throw new Error(`the provider answered ${answer.statusCode}`);
    }
    await store.link(shop, orderId, providerId);
  },
  { connection, prefix, concurrency: 16 },
);
worker.on("ready", () => console.log("ready"));
worker.on("failed", (_job, error) => console.error(`floor worker: ${error.message}`));
