/**
 * The receiver as bench:ingest measures it: the real web app (HMAC, dedupe, snapshot, queue) plus
 * a bare Hono "200 OK" route on the same server, the physical bound in the same run. Run as a
 * separate process so the load generator does not share its event loop.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { parseEnv } from "../src/config/env.ts";
import { resolveRuntimeConfig } from "../src/config/runtime-config.ts";
import { createContext } from "../src/context.ts";
import { createLogger } from "../src/lib/logger.ts";
import { createWebApp } from "../src/server/app.ts";

const redisUrl = process.argv[2] ?? "";
const env = parseEnv({
  DATABASE_PATH: join(mkdtempSync(join(tmpdir(), "bench-ingest-")), "c.sqlite"),
  SHOPIFY_API_SECRET: "bench-secret",
  LOG_LEVEL: "silent",
});
const ctx = createContext({
  config: resolveRuntimeConfig(env),
  logger: createLogger("silent"),
  redisUrl,
  prefix: "bench-ingest",
  providerDefaults: {
    baseUrl: "http://127.0.0.1:9/v1",
    authUrl: "http://127.0.0.1:9",
    audience: "none",
  },
});
await ctx.ready();
ctx.shops.upsertShop("bench-shop.myshopify.com", { storeId: 1001 });
const web = createWebApp(ctx);
const app = new Hono();
app.post("/bare", (c) => c.text("OK"));
app.route("/", web.app);
const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`listening ${info.port}\n`);
});
process.on("SIGTERM", () => {
  server.close();
  void ctx.close().then(() => process.exit(0));
});
