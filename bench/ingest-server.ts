/**
 * The receiver as bench:ingest measures it: the real web app (HMAC, dedupe, snapshot, queue) plus
 * a bare Hono "200 OK" route on the same server, the physical bound in the same run. Run as a
 * separate process so the load generator does not share its event loop.
 *
 * `bench-ingest-server <redisUrl> <databasePath> <processes>`: with more than one process, the
 * web role's own cluster (src/server/web-cluster.ts, what WEB_PROCESSES runs) serves the port,
 * bare route included, so the bound and the receiver are measured on the same setup.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { Redis } from "ioredis";
import { createConnector } from "../src/app/connector.ts";
import { composeWebApp } from "../src/app/web.ts";
import { parseEnv } from "../src/config/env.ts";
import { resolveRuntimeConfig } from "../src/config/runtime-config.ts";
import { createLogger } from "../src/lib/logger.ts";
import { startTracing } from "../src/lib/tracing.ts";
import { isWebPrimary, startWebPrimary } from "../src/server/web-cluster.ts";

const [redisUrl = "", databasePath = "", processArg = "1"] = process.argv.slice(2);
const processes = Number(processArg);
const logger = createLogger("silent");
// bench:ingest --otel sets OTEL_EXPORTER_OTLP_ENDPOINT: traces on, as the web role starts them.
await startTracing(process.env, { production: false });

if (isWebPrimary(processes)) {
  const primary = await startWebPrimary({ processes, logger });
  process.stdout.write(
    `listening ${primary.port} pids ${[process.pid, ...primary.pids()].join(",")}\n`,
  );
  process.on("SIGTERM", () => void primary.stop().then(() => process.exit(0)));
} else {
  const env = parseEnv({
    ...(databasePath.startsWith("postgres")
      ? { DATABASE_URL: databasePath }
      : { DATABASE_PATH: databasePath }),
    SHOPIFY_API_SECRET: "bench-secret",
    LOG_LEVEL: "silent",
  });
  const ctx = createConnector({
    config: resolveRuntimeConfig(env),
    logger,
    redis: redisUrl,
    prefix: "bench-ingest",
    providerDefaults: {
      baseUrl: "http://127.0.0.1:9/v1",
      authUrl: "http://127.0.0.1:9",
      audience: "none",
    },
  });
  await ctx.ready();
  await ctx.shops.upsertShop("bench-shop.myshopify.com", { storeId: 1001 });
  const web = composeWebApp(ctx);
  const app = new Hono();
  app.post("/bare", (c) => c.text("OK"));
  // The receiver's floor: what any receiver of a signed webhook must do with it (read the body,
  // check its HMAC, parse it, one Redis write to make it durable) and nothing of the connector's.
  // The keys go round a thousand, so a long row does not fill Redis.
  const floorRedis = new Redis(redisUrl);
  let floorSeq = 0;
  app.post("/floor", async (c) => {
    const bytes = Buffer.from(await c.req.arrayBuffer());
    const sent = Buffer.from(c.req.header("x-shopify-hmac-sha256") ?? "", "base64");
    const digest = createHmac("sha256", "bench-secret").update(bytes).digest();
    if (sent.length !== digest.length || !timingSafeEqual(sent, digest)) return c.text("no", 401);
    const body = bytes.toString("utf8");
    JSON.parse(body);
    await floorRedis.set(`bench-floor:${process.pid}:${floorSeq++ % 1000}`, body);
    return c.text("OK");
  });
  app.route("/", web.app);
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
    if (processes === 1) process.stdout.write(`listening ${info.port} pids ${process.pid}\n`);
  });
  process.on("SIGTERM", () => {
    server.close();
    floorRedis.disconnect();
    void ctx.close().then(() => process.exit(0));
  });
}
