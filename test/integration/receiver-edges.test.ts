import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createConnector } from "../../src/app/connector.ts";
import { composeWebApp } from "../../src/app/web.ts";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { parseEnv } from "../../src/config/env.ts";
import { resolveRuntimeConfig } from "../../src/config/runtime-config.ts";
import { createLogger } from "../../src/lib/logger.ts";
import { startRedisServer } from "../../src/lib/redis-server.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { type Pipeline, SHOPIFY_SECRET, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.close();
  pipeline = undefined;
});

/**
 * The web app on a context of its own whose Redis the test may kill or pause (the shared test
 * Redis must stay up). `send` posts a signed order webhook with the given delivery id.
 */
async function receiverOnOwnRedis(
  redisUrl: string,
  orderId: number,
  logger = createLogger("silent"),
) {
  const dir = mkdtempSync(join(tmpdir(), "connector-receiver-"));
  const env = parseEnv({
    DATABASE_PATH: join(dir, "c.sqlite"),
    SHOPIFY_API_SECRET: SHOPIFY_SECRET,
    LOG_LEVEL: "silent",
  });
  const ctx = createConnector({
    config: resolveRuntimeConfig(env),
    logger,
    redis: redisUrl,
    prefix: `t-${randomUUID()}`,
    providerDefaults: {
      baseUrl: "http://127.0.0.1:9/v1",
      authUrl: "http://127.0.0.1:9",
      audience: "a",
    },
  });
  await ctx.ready();
  await ctx.shops.upsertShop(TEST_SHOP, { storeId: 1001 });
  const web = composeWebApp(ctx);
  const send = (webhookId: string, shop = TEST_SHOP) => {
    const signed = signWebhook({
      topic: "orders/create",
      shop,
      secret: SHOPIFY_SECRET,
      webhookId,
      body: JSON.stringify({
        id: orderId,
        updated_at: "2026-11-01T10:00:00Z",
        created_at: "2026-11-01T10:00:00Z",
        currency: "USD",
        current_total_price_set: { shop_money: { amount: "1.00" } },
      }),
    });
    return web.app.request("/webhooks/shopify", {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
  };
  const close = async () => {
    await web.close().catch(() => {});
    await ctx.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  return { ctx, send, close };
}

describe("receiver edges", () => {
  it("answers 413 to a body over the size limit, before checking anything else", async () => {
    pipeline = await startPipeline({ env: { WEBHOOK_MAX_BYTES: "1024" } });
    const response = await pipeline.send("orders/create", { padding: "x".repeat(2_000) });
    expect(response.status).toBe(413);
    expect(await pipeline.ctx.queues.sync.count()).toBe(0);
  });

  it("answers 413 from Content-Length alone, and accepts a declared length within the limit", async () => {
    pipeline = await startPipeline({ env: { WEBHOOK_MAX_BYTES: "1024" } });
    const big = signWebhook({
      topic: "orders/create",
      shop: TEST_SHOP,
      secret: SHOPIFY_SECRET,
      body: JSON.stringify({ padding: "x".repeat(2_000) }),
    });
    const declared = (body: string) => ({ "content-length": String(Buffer.byteLength(body)) });
    const refused = await pipeline.web.app.request("/webhooks/shopify", {
      method: "POST",
      headers: { ...big.headers, ...declared(big.body) },
      body: big.body,
    });
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ error: { code: "payload_too_large" } });

    const small = signWebhook({
      topic: "orders/create",
      shop: TEST_SHOP,
      secret: SHOPIFY_SECRET,
      body: JSON.stringify({ id: 1, note: "short" }),
    });
    const accepted = await pipeline.web.app.request("/webhooks/shopify", {
      method: "POST",
      headers: { ...small.headers, ...declared(small.body) },
      body: small.body,
    });
    // Within the limit the body is read and verified: an order without updated_at is unusable.
    expect(accepted.status).toBe(200);
  });

  it("answers 503, never 200, while Redis is down, and 200 again once it is back", async () => {
    const redis = await startRedisServer();
    const { ctx, send, close } = await receiverOnOwnRedis(redis.url, 5001);
    try {
      expect((await send("w1")).status).toBe(200);
      await redis.stop("SIGKILL");
      const down = await send("w2");
      expect(down.status).toBe(503);
      expect(down.headers.get("retry-after")).toBe("5");
      const back = await startRedisServer({ port: redis.port });
      try {
        await new Promise<void>((resolve) => {
          if (ctx.ingestRedis.status === "ready") resolve();
          else ctx.ingestRedis.once("ready", () => resolve());
        });
        expect((await send("w3")).status).toBe(200);
      } finally {
        await back.stop();
      }
    } finally {
      await close();
    }
  });

  it("says webhooks answered 503, and a shop's webhooks dropped, once per cause, and when it ends", async () => {
    const redis = await startRedisServer();
    const logs = captureLogs("receiver");
    const { ctx, send, close } = await receiverOnOwnRedis(
      redis.url,
      5003,
      createLogger("debug", logs.destination),
    );
    const lines = () =>
      logs
        .read()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.component === "webhooks");
    const seen = () => lines().filter((l) => l.level !== "debug");
    try {
      // A shop that is not installed: ten webhooks, one warning; each one's line at debug.
      const ghost = "ghost-shop.myshopify.com";
      for (let i = 0; i < 10; i++) expect((await send(`g${i}`, ghost)).status).toBe(200);
      const dropped = "webhook for a shop that is not installed or active";
      expect(lines().filter((l) => l.msg === dropped)).toHaveLength(10);
      expect(seen().map((l) => [l.level, l.msg])).toEqual([["warn", dropped]]);
      // Installed (the receiver reads a shop's status again after its 5 s cache): its next
      // webhook is queued, and one line says the drops ended.
      await ctx.shops.upsertShop(ghost, { storeId: 1001 });
      let tries = 0;
      await vi.waitFor(
        async () => {
          const answer = await send(`g-after-${tries++}`, ghost);
          expect(await answer.json()).toMatchObject({ outcome: "queued" });
        },
        { timeout: 15_000, interval: 250 },
      );
      expect(seen().slice(1)).toEqual([
        expect.objectContaining({
          level: "info",
          shop: ghost,
          webhooksDropped: 10 + tries - 1,
          msg: expect.stringContaining(`webhooks for ${ghost} no longer dropped`),
        }),
      ]);

      // Redis gone: ten webhooks answered 503, one error line.
      await redis.stop("SIGKILL");
      const down = await Promise.all(Array.from({ length: 10 }, (_, i) => send(`d${i}`)));
      expect(down.map((r) => r.status)).toEqual(Array(10).fill(503));
      const refused = "could not make the webhook durable; answering 503";
      expect(lines().filter((l) => l.msg === refused)).toHaveLength(10);
      expect(seen().filter((l) => l.msg === refused)).toHaveLength(1);
      const back = await startRedisServer({ port: redis.port });
      try {
        await new Promise<void>((resolve) => {
          if (ctx.ingestRedis.status === "ready") resolve();
          else ctx.ingestRedis.once("ready", () => resolve());
        });
        expect((await send("d-after")).status).toBe(200);
        expect(seen().filter((l) => String(l.msg).startsWith("webhooks no longer"))).toEqual([
          expect.objectContaining({ level: "info", webhooksRefused: 10 }),
        ]);
      } finally {
        await back.stop();
      }
    } finally {
      await close();
      await redis.stop().catch(() => {});
      logs.remove();
    }
  });

  it("answers 503 when Redis keeps the port open and answers nothing, and the retry is 200 once it answers again", async () => {
    const redis = await startRedisServer();
    const { ctx, send: sendAs, close } = await receiverOnOwnRedis(redis.url, 5002);
    const send = () => sendAs("w-stopped");
    try {
      // SIGSTOP: the connection stays up and nothing answers, as in a network partition. The
      // receiver's deadline (one per webhook) answers for it.
      redis.process.kill("SIGSTOP");
      const stalled = await send();
      expect(stalled.status).toBe(503);
      expect(stalled.headers.get("retry-after")).toBe("5");
      redis.process.kill("SIGCONT");
      // The work left under way may have completed by now: the retry is then a duplicate.
      const retry = await send();
      expect(retry.status).toBe(200);
      expect(["queued", "duplicate"]).toContain(
        ((await retry.json()) as { outcome: string }).outcome,
      );
      expect(await ctx.queues.sync.count()).toBe(1);
    } finally {
      redis.process.kill("SIGCONT");
      await close();
      await redis.stop();
    }
  });
});
