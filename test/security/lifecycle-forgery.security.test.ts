import { afterEach, describe, expect, it } from "vitest";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

/**
 * Shopify's HMAC covers the body only; topic and shop come from headers. A captured, correctly
 * signed delivery replayed under another topic or shop header must not act on another shop.
 */
const VICTIM = TEST_SHOP;
/** The attacker's own shop: its deliveries are signed by Shopify with the app's secret. */
const ATTACKER = "attacker-shop.myshopify.com";

let p: Pipeline;
afterEach(async () => {
  await p?.close();
});

interface Answer {
  outcome?: string;
  error?: { code: string; fields?: { path: string }[] };
}

async function withVictimOrder() {
  p = await startPipeline();
  const model = newModelOrder(7_001, 7_001_000);
  expect((await p.send("orders/create", orderPayload(model), { shop: VICTIM })).status).toBe(200);
  await p.drain();
  expect(await p.ctx.links.loadLinks(VICTIM, String(model.id))).not.toBeNull();
  return model;
}

const privacyRows = () => p.ctx.db.orm.select().from(p.ctx.db.t.privacyRequests);

describe("forged lifecycle webhooks", () => {
  it("refuses app/uninstalled whose body names another shop than the header (400, shop kept)", async () => {
    await withVictimOrder();
    // The attacker's own shop's uninstall, signed by Shopify, re-sent with the victim's header.
    const res = await p.send(
      "app/uninstalled",
      { id: 1, myshopify_domain: ATTACKER, domain: "attacker.example" },
      { shop: VICTIM },
    );
    expect(res.status).toBe(400);
    const answer = (await res.json()) as Answer;
    expect(answer.error?.code).toBe("shop_mismatch");
    expect(answer.error?.fields?.[0]?.path).toBe("body.myshopify_domain");
    expect(await p.ctx.shops.statusOf(VICTIM)).toBe("active");
    expect(await p.ctx.queues.deadLetter.count()).toBe(0);
  });

  it("refuses app/uninstalled whose body names no shop at all", async () => {
    await withVictimOrder();
    const res = await p.send("app/uninstalled", { id: 1 }, { shop: VICTIM });
    expect(res.status).toBe(400);
    expect(await p.ctx.shops.statusOf(VICTIM)).toBe("active");
  });

  it("refuses shop/redact replayed under another shop's header: links kept", async () => {
    const model = await withVictimOrder();
    const res = await p.send(
      "shop/redact",
      { shop_id: 9, shop_domain: ATTACKER },
      { shop: VICTIM },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as Answer).error?.fields?.[0]?.path).toBe("body.shop_domain");
    expect(await p.ctx.links.loadLinks(VICTIM, String(model.id))).not.toBeNull();
    expect(await privacyRows()).toEqual([]);
  });

  it("refuses shop/redact for a shop that is installed, even with a matching body", async () => {
    const model = await withVictimOrder();
    const res = await p.send("shop/redact", { shop_id: 9, shop_domain: VICTIM }, { shop: VICTIM });
    expect(res.status).toBe(200);
    expect(((await res.json()) as Answer).outcome).toBe("refused-installed");
    expect(await p.ctx.shops.getShop(VICTIM)).not.toBeNull();
    expect(await p.ctx.links.loadLinks(VICTIM, String(model.id))).not.toBeNull();
    expect(await privacyRows()).toEqual([]);
  });

  it("refuses customers/redact naming another shop: the victim's snapshots stay", async () => {
    const model = await withVictimOrder();
    const res = await p.send(
      "customers/redact",
      { shop_domain: ATTACKER, customer: { id: 1 }, orders_to_redact: [model.id] },
      { shop: VICTIM },
    );
    expect(res.status).toBe(400);
    expect(await p.ctx.snapshots.get(VICTIM, String(model.id))).not.toBeNull();
  });

  it("refuses an order whose status URL is on another shop's myshopify.com domain", async () => {
    p = await startPipeline();
    const body = {
      ...orderPayload(newModelOrder(7_002, 7_002_000)),
      order_status_url: `https://${ATTACKER}/1/orders/abc/authenticate?key=k`,
    };
    const res = await p.send("orders/create", body, { shop: VICTIM });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Answer).error?.fields?.[0]?.path).toBe("body.order_status_url");
    expect(await p.ctx.queues.sync.count()).toBe(0);
    // The same order with its own shop's status URL is taken.
    const own = { ...body, order_status_url: `https://${VICTIM}/1/orders/abc/authenticate?key=k` };
    expect((await p.send("orders/create", own, { shop: VICTIM })).status).toBe(200);
  });
});
