import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { idOf, normalizeWebhook, PayloadError } from "../../src/shopify/index.ts";
import { ShopDomain, ShopifyOrderId } from "../../src/sync/source-order.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, SHOPIFY_SECRET, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * Shopify IDs are unsigned 64-bit integers; a 5,000-digit order ID was synced. Anything larger,
 * signed or zero-padded is refused where it enters, naming the field.
 */
const HUGE = "9".repeat(5_000);
const U64_MAX = "18446744073709551615";

describe("Shopify IDs", () => {
  it("accept 1 to 2^64-1 as numbers, bigints, text or gids, and nothing else", () => {
    expect(idOf(U64_MAX)).toBe(U64_MAX);
    expect(idOf(BigInt(U64_MAX))).toBe(U64_MAX);
    expect(idOf(`gid://shopify/Order/${U64_MAX}`)).toBe(U64_MAX);
    for (const bad of [
      "18446744073709551616",
      HUGE,
      "0",
      "007",
      "-1",
      `gid://shopify/Order/${HUGE}`,
    ]) {
      expect(idOf(bad), bad.slice(0, 30)).toBeNull();
    }
    expect(idOf(2n ** 64n)).toBeNull();
    expect(ShopifyOrderId.safeParse(HUGE).success).toBe(false);
  });

  it("refuse an order webhook with a 5,000-digit ID, naming the field", () => {
    const body = { ...orderPayload(newModelOrder(1, 1)), id: HUGE };
    expect(() => normalizeWebhook("orders/create", ShopDomain.parse(TEST_SHOP), body)).toThrow(
      PayloadError,
    );
    try {
      normalizeWebhook("orders/create", ShopDomain.parse(TEST_SHOP), body);
    } catch (error) {
      expect((error as PayloadError).field).toBe("id");
    }
  });
});

describe("through the receiver", () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await startPipeline();
  });
  afterAll(() => p.close());

  it("dead-letters the 5,000-digit order with the field, and syncs nothing", async () => {
    // The ID as a JSON number literal, as an attacker would send it.
    const raw = JSON.stringify({ ...orderPayload(newModelOrder(2, 2)), id: "__ID__" }).replace(
      '"__ID__"',
      HUGE,
    );
    const signed = signWebhook({
      topic: "orders/create",
      shop: TEST_SHOP,
      body: raw,
      secret: SHOPIFY_SECRET,
    });
    const res = await p.web.app.request("/webhooks/shopify", {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outcome: string }).outcome).toBe("dead-lettered");
    const [entry] = await p.ctx.queues.deadLetter.getJobs();
    expect(entry?.data.fields?.[0]?.path).toBe("id");
    expect(await p.ctx.queues.sync.count()).toBe(0);
  });
});
