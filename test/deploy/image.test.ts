import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { service } from "../helpers/services.ts";
import {
  buildImage,
  exampleOrder,
  IMAGE_SECRET,
  IMAGE_SHOP,
  type ImageRun,
  removeImage,
  startImage,
} from "./image-harness.ts";

/**
 * The image without Docker (test/deploy/image-harness.ts): `npm ci --omit=dev` with no compiler
 * on PATH and an empty home, the bundle, the
 * web and worker roles as nobody with NODE_ENV=production on an empty data directory. A signed
 * webhook must end as a provider order. The fault suite runs more of it (test/chaos).
 */
let app: string;
let image: ImageRun;
beforeAll(async () => {
  app = await buildImage();
  image = await startImage(app, service("redisUrl"));
}, 180_000);
afterAll(async () => {
  await image?.close();
  if (app) removeImage(app);
});

describe("the production image, without Docker", () => {
  it("installs no dev dependency and no stand-in, runs as nobody, and syncs a signed webhook", async () => {
    for (const dev of [
      "tsx",
      "vitest",
      "playwright-core",
      "graphql",
      "esbuild",
      "@connector/provider-sandbox",
      "@connector/shopify-standin",
    ]) {
      expect(existsSync(join(app, "node_modules", dev)), dev).toBe(false);
    }
    expect(existsSync(join(app, "src"))).toBe(false);
    // Installed with no compiler on PATH: nothing was built, better-sqlite3's own binary loads.
    expect(existsSync(join(app, "node_modules/better-sqlite3/build"))).toBe(false);

    await image.registerShop();
    await image.start("web");
    await image.start("worker");
    expect((await fetch(`${image.webUrl}/readyz`)).status).toBe(200);
    // Production: /metrics needs its token.
    expect((await fetch(`${image.webUrl}/metrics`)).status).toBe(401);

    const body = exampleOrder();
    const signed = signWebhook({
      topic: "orders/create",
      shop: IMAGE_SHOP,
      body,
      secret: IMAGE_SECRET,
    });
    const res = await fetch(`${image.webUrl}/webhooks/shopify`, {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
    expect(res.status).toBe(200);
    const sourceOrderId = String(JSON.parse(body).id);
    const deadline = Date.now() + 20_000;
    while (!image.sandbox.state.orders.find(1001, sourceOrderId) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(image.sandbox.state.orders.find(1001, sourceOrderId)).toBeDefined();

    // Every data file belongs to nobody and to nobody else.
    for (const file of readdirSync(image.data)) {
      const stat = statSync(join(image.data, file));
      expect(stat.uid, file).toBe(65534);
      expect(stat.mode & 0o077, file).toBe(0);
    }
  });
});
