import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { type RedisServerHandle, startRedisServer } from "../../src/lib/redis-server.ts";
import {
  buildImage,
  exampleOrder,
  IMAGE_SECRET,
  IMAGE_SHOP,
  type ImageRun,
  removeImage,
  startImage,
} from "../deploy/image-harness.ts";

/**
 * The production image without Docker, under a worker killed with SIGKILL: the orders posted
 * meanwhile all reach the provider once, from a restarted worker, as nobody, in production mode.
 */
const ORDERS = 40 * Number(process.env.CHAOS_SCALE ?? 1);
let redis: RedisServerHandle;
let app: string;
let image: ImageRun;
beforeAll(async () => {
  redis = await startRedisServer({ appendonly: true, appendfsync: "always" });
  app = await buildImage();
  image = await startImage(app, redis.url);
}, 300_000);
afterAll(async () => {
  await image?.close();
  if (app) removeImage(app);
  await redis?.stop();
});

describe("the production image under kill -9", () => {
  it("syncs every order exactly once through a worker killed and restarted", async () => {
    await image.registerShop();
    await image.start("web");
    let worker = await image.start("worker");
    const template = JSON.parse(exampleOrder()) as Record<string, unknown>;
    const ids: string[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const id = 7_000_000_000 + i;
      ids.push(String(id));
      const body = JSON.stringify({
        ...template,
        id,
        name: `#${9000 + i}`,
        order_number: 9000 + i,
      });
      const signed = signWebhook({
        topic: "orders/create",
        shop: IMAGE_SHOP,
        body,
        secret: IMAGE_SECRET,
      });
      const res = await fetch(`${image.webUrl}/webhooks/shopify`, {
        method: "POST",
        headers: signed.headers,
        body,
      });
      expect(res.status).toBe(200);
      if (i === Math.floor(ORDERS / 2)) {
        worker.kill("SIGKILL");
        await new Promise((r) => worker.once("exit", r));
        await new Promise((r) => setTimeout(r, randomInt(50, 300)));
        worker = await image.start("worker");
      }
    }
    const deadline = Date.now() + 120_000;
    const synced = () => ids.filter((id) => image.sandbox.state.orders.find(1001, id)).length;
    while (synced() < ids.length && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect(synced()).toBe(ids.length);
    // Exactly once: one provider order per Shopify order.
    const all = image.sandbox.state.orders.all.filter((o) => ids.includes(String(o.sourceOrderId)));
    expect(all).toHaveLength(ids.length);
    console.log(
      `image under kill -9: ${ids.length} orders, ${all.length} provider orders, 0 duplicates`,
    );
  });
});
