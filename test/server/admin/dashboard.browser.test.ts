import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { type ServerType, serve } from "@hono/node-server";
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { deadLetterId } from "../../../src/queue/order-queues.ts";
import { ARTIFACTS, launchChromium } from "../../helpers/browser.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";

const TOKEN = "dashboard-token-0123456789abcdef";

let browser: Browser;
let pipeline: Pipeline | undefined;
let server: ServerType | undefined;

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  await pipeline?.ctx.queues.deadLetter.obliterate({ force: true }).catch(() => {});
  await pipeline?.close();
  pipeline = undefined;
  server = undefined;
});

/** The web app over real HTTP on a free port. */
async function listen(p: Pipeline): Promise<string> {
  return new Promise((resolveUrl) => {
    server = serve({ fetch: p.web.app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolveUrl(`http://127.0.0.1:${info.port}`),
    );
  });
}

describe("queue dashboard in headless Chromium", () => {
  it("renders every queue after a login with the token, and shows a dead letter", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN }, workers: 0 });
    const now = new Date().toISOString();
    await pipeline.ctx.queues.addDeadLetter(deadLetterId(TEST_SHOP, "4242"), {
      shop: TEST_SHOP,
      orderId: "4242",
      topic: "orders/create",
      reason: "the provider refused the request",
      category: "provider-validation",
      errorClass: "ProviderValidationError",
      attempts: 1,
      firstFailedAt: now,
      lastFailedAt: now,
    });
    const base = await listen(pipeline);
    const page = await browser.newPage();
    try {
      // The token is exchanged for the session cookie and dropped from the address.
      const response = await page.goto(`${base}/admin/queues?token=${TOKEN}`);
      expect(response?.status()).toBe(200);
      expect(new URL(page.url()).search).toBe("");
      for (const name of ["sync", "dead-letter", "backfill", "maintenance"]) {
        await page.getByRole("link", { name, exact: true }).first().waitFor({ timeout: 15_000 });
      }
      await page.getByRole("link", { name: "dead-letter", exact: true }).first().click();
      await page.getByText(deadLetterId(TEST_SHOP, "4242")).first().waitFor({ timeout: 15_000 });
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: resolve(ARTIFACTS, "queue-dashboard.png"), fullPage: true });
      // The dead-letter queue is a store, not a stuck queue: the board has no worker warning
      // for it, while the sync queue (no worker runs in this test) has one.
      const queues = (await (await page.request.get(`${base}/admin/queues/api/queues`)).json()) as {
        queues: { name: string; hasWorkers: boolean | null }[];
      };
      const byName = Object.fromEntries(queues.queues.map((q) => [q.name, q.hasWorkers]));
      expect(byName["dead-letter"]).toBeNull();
      expect(byName.sync).toBe(false);
    } finally {
      await page.close();
    }
  });

  it("refuses the dashboard without the token and with a wrong one", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN }, workers: 0 });
    const base = await listen(pipeline);
    const page = await browser.newPage();
    try {
      const bare = await page.goto(`${base}/admin/queues`);
      expect(bare?.status()).toBe(401);
      await expect(page.locator("input[name=token]").count()).resolves.toBe(1);
      await expect(page.getByRole("link", { name: "sync", exact: true }).count()).resolves.toBe(0);

      const wrong = await page.goto(`${base}/admin/queues?token=not-the-admin-token`);
      expect(wrong?.status()).toBe(401);
      await expect(page.getByText("That token is not valid.").count()).resolves.toBe(1);

      // The dashboard's own API refuses too.
      const api = await page.request.get(`${base}/admin/queues/api/queues`);
      expect(api.status()).toBe(401);
    } finally {
      await page.close();
    }
  });
});
