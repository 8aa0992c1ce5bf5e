import type { RestOrder } from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { type InstallHarness, startInstallHarness } from "../helpers/install-harness.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { type ModelOrder, orderPayload } from "../helpers/shopify-order-builder.ts";
import { standInOrder } from "../helpers/standin-orders.ts";

/**
 * A link must never point into the wrong provider store: a store switch starts a fresh link
 * space, a 404 on a linked order looks it up and creates it again, and an order write answered
 * for another Shopify order stops the job before anything more is written.
 */
/** A one-line order as the stand-in Shopify and the webhooks carry it. */
const order = (id: number): ModelOrder => standInOrder(id, "2026-11-01T10:00:00Z").model;
const later = (model: ModelOrder, note: string): ModelOrder => ({
  ...model,
  note,
  updatedAt: new Date(Date.parse(model.updatedAt) + 60_000).toISOString(),
});

let pipeline: Pipeline | undefined;
let harness: InstallHarness | undefined;
afterEach(async () => {
  await pipeline?.close();
  await harness?.close();
  pipeline = undefined;
  harness = undefined;
});

type LinkHook = (
  method: string,
  sourceOrderId: string,
  phase: "before" | "after",
) => Promise<void> | void;

/**
 * Two orders, A created first (provider order 10001), then B; then the provider loses
 * everything and hands its IDs out again. From then on `hook` runs before and after each read of
 * an order's links (`loadLinks`, or `orderState` as a job starts) and each create record, to
 * stage a race between A's and B's jobs.
 */
async function raceSetup(database: "sqlite" | "postgres", hook: LinkHook) {
  const a = order(8_800_501);
  const b = order(8_800_601);
  let armed = false;
  const p = await startPipeline({
    database,
    wrapLinks: (links) =>
      new Proxy(links, {
        get(target, property) {
          const value = Reflect.get(target, property, target);
          if (typeof value !== "function") return value;
          // A job's first read of its links comes with the order's state (`orderState`); the
          // later ones are `loadLinks`: the hook sees both as a read of the links.
          const method = property === "orderState" ? "loadLinks" : property;
          if (method !== "loadLinks" && method !== "recordOrderCreated") {
            return value.bind(target);
          }
          return async (...args: unknown[]) => {
            if (!armed) return value.apply(target, args);
            const first = args[0];
            const sourceOrderId =
              typeof first === "string"
                ? String(args[1])
                : (first as { sourceOrderId: string }).sourceOrderId;
            await hook(method, sourceOrderId, "before");
            const result = await value.apply(target, args);
            await hook(method, sourceOrderId, "after");
            return result;
          };
        },
      }),
  });
  pipeline = p;
  await p.send("orders/create", orderPayload(a));
  await p.drain();
  await p.send("orders/create", orderPayload(b));
  await p.drain();
  const aId = p.sandbox.state.orders.find(1001, String(a.id))?.orderId;
  p.sandbox.state.orders.loseEverything();
  armed = true;
  return { a, b, aId, p };
}

/** No dead letter; B keeps the reused ID with its own fields, A is created again with its own. */
async function expectHealed(p: Pipeline, a: ModelOrder, b: ModelOrder, aId: number | undefined) {
  await p.drain();
  await expect
    .poll(() => p.sandbox.state.orders.find(1001, String(a.id))?.notes, { timeout: 15_000 })
    .toBe("for A");
  await p.drain();
  expect(await p.ctx.queues.deadLetter.count()).toBe(0);
  // B's provider order received A's update once; B's own fields were sent again after it.
  expect(p.sandbox.state.orders.find(1001, String(b.id))?.orderId).toBe(aId);
  expect(p.sandbox.state.orders.find(1001, String(b.id))?.notes).toBe("for B");
  expect(p.sandbox.state.orders.find(1001, String(a.id))?.orderId).not.toBe(aId);
  expect(p.sandbox.state.orders.all.filter((o) => o.storeId === 1001)).toHaveLength(2);
}

describe("links bound to their provider store", () => {
  it("after a store switch in the settings, the next update creates the order in the new store and writes nothing to the old", async () => {
    const PROVIDER = {
      clientId: "switch-client",
      clientSecret: "switch-secret-1",
      stores: [1001, 1002],
    };
    const SHOP = "switch-shop.myshopify.com";
    harness = await startInstallHarness({ workers: true, provider: PROVIDER });
    const h = harness;
    const { jar } = await h.install(SHOP);
    const form = (path: string, body: Record<string, string>) => h.postForm(path, body, jar);
    await form("/settings/provider", {
      clientId: PROVIDER.clientId,
      clientSecret: PROVIDER.clientSecret,
      environment: "production",
    });
    expect((await form("/settings/store", { storeId: "1001" })).headers.get("location")).toContain(
      "saved=store",
    );
    const model = order(8_800_001);
    await h.standIn.upsertOrder(SHOP, orderPayload(model) as RestOrder);
    await expect
      .poll(() => h.provider.state.orders.find(1001, String(model.id)), { timeout: 15_000 })
      .toBeDefined();
    const oldOrder = structuredClone(h.provider.state.orders.find(1001, String(model.id)));
    const callsToOld = h.provider.state.admittedFor(1001).length;

    const switched = await form("/settings/store", { storeId: "1002" });
    expect(switched.status).toBe(303);
    expect(switched.headers.get("location")).toContain("saved=storeSwitched");
    const page = await (await h.get(switched.headers.get("location") ?? "/settings", jar)).text();
    expect(page).toContain("Orders already sent to the previous store stay there untouched");
    expect(await h.ctx.links.retired(SHOP)).toMatchObject([
      { sourceOrderId: String(model.id), storeId: 1001 },
    ]);

    await h.standIn.upsertOrder(SHOP, orderPayload(later(model, "gift wrap")) as RestOrder);
    await expect
      .poll(() => h.provider.state.orders.find(1002, String(model.id))?.notes, { timeout: 15_000 })
      .toBe("gift wrap");
    // Nothing more reached the old store: not a call, not a change.
    expect(h.provider.state.admittedFor(1001).length).toBe(callsToOld);
    expect(h.provider.state.orders.find(1001, String(model.id))).toEqual(oldOrder);
  });

  it("after an environment switch in the settings, orders go to the new environment and the merchant is told", async () => {
    const PROVIDER = { clientId: "env-client", clientSecret: "env-secret-1", stores: [1001] };
    const SHOP = "env-switch.myshopify.com";
    harness = await startInstallHarness({ workers: true, provider: PROVIDER, staging: PROVIDER });
    const h = harness;
    const { jar } = await h.install(SHOP);
    const form = (path: string, body: Record<string, string>) => h.postForm(path, body, jar);
    const creds = { clientId: PROVIDER.clientId, clientSecret: PROVIDER.clientSecret };
    await h.connect(jar, creds, 1001);
    const model = order(8_800_051);
    await h.standIn.upsertOrder(SHOP, orderPayload(model) as RestOrder);
    await expect
      .poll(() => h.provider.state.orders.find(1001, String(model.id)), { timeout: 15_000 })
      .toBeDefined();
    const callsToProduction = h.provider.state.admittedFor(1001).length;

    const switched = await form("/settings/provider", { ...creds, environment: "staging" });
    expect(switched.headers.get("location")).toContain("saved=providerSwitched");
    const page = await (await h.get(switched.headers.get("location") ?? "/settings", jar)).text();
    expect(page).toContain("Orders already sent to the previous environment stay there untouched");

    await h.standIn.upsertOrder(SHOP, orderPayload(later(model, "to staging")) as RestOrder);
    await expect
      .poll(() => h.staging?.state.orders.find(1001, String(model.id))?.notes, { timeout: 15_000 })
      .toBe("to staging");
    expect(h.provider.state.admittedFor(1001).length).toBe(callsToProduction);
  });

  it("looks a linked order up and creates it again when the provider answers 404, instead of dead-lettering it", async () => {
    pipeline = await startPipeline();
    const model = order(8_800_101);
    await pipeline.send("orders/create", orderPayload(model));
    await pipeline.drain();
    const first = pipeline.sandbox.state.orders.find(1001, String(model.id));
    expect(first).toBeDefined();
    pipeline.sandbox.state.orders.forget(first?.orderId ?? 0);

    await pipeline.send("orders/updated", orderPayload(later(model, "left at the door")));
    await pipeline.drain();
    const again = pipeline.sandbox.state.orders.find(1001, String(model.id));
    expect(again?.notes).toBe("left at the door");
    expect(again?.orderId).not.toBe(first?.orderId);
    expect((await pipeline.ctx.links.loadLinks(TEST_SHOP, String(model.id)))?.orderId).toBe(
      again?.orderId,
    );
    expect(await pipeline.ctx.queues.deadLetter.count()).toBe(0);
  });

  it("retires a link the moment the provider hands its order ID to another order", async () => {
    pipeline = await startPipeline();
    const a = order(8_800_201);
    await pipeline.send("orders/create", orderPayload(a));
    await pipeline.drain();
    const aId = pipeline.sandbox.state.orders.find(1001, String(a.id))?.orderId;
    // The provider loses everything and hands the same IDs out again: B gets A's old ID.
    pipeline.sandbox.state.orders.loseEverything();
    const b = order(8_800_301);
    await pipeline.send("orders/create", orderPayload(b));
    await pipeline.drain();
    const bOrder = structuredClone(pipeline.sandbox.state.orders.find(1001, String(b.id)));
    expect(bOrder?.orderId).toBe(aId);
    expect(await pipeline.ctx.links.loadLinks(TEST_SHOP, String(a.id))).toBeNull();

    // A's next change creates A again; B's order never receives A's data.
    await pipeline.send("orders/updated", orderPayload(later(a, "for A only")));
    await pipeline.drain();
    expect(pipeline.sandbox.state.orders.find(1001, String(a.id))?.notes).toBe("for A only");
    expect(pipeline.sandbox.state.orders.find(1001, String(b.id))).toEqual(bOrder);
    expect(await pipeline.ctx.queues.deadLetter.count()).toBe(0);
  });

  // A's job reads its link (the provider's ID 10001 before it lost everything) and, before its
  // update leaves, B's create is handed 10001 again: the update lands on B's provider order and is
  // answered as B's. Staged by hooks around the link store's reads and create records.
  it.each(["sqlite", "postgres"] as const)(
    "heals an order whose update raced another order's create of its reused ID, and repairs that order (%s)",
    async (database) => {
      const reads = { a: 0 };
      const { a, b, aId, p } = await raceSetup(database, async (method, sourceOrderId, phase) => {
        if (method !== "loadLinks" || sourceOrderId !== String(a.id) || phase !== "after") return;
        if (reads.a++ > 0) return;
        // B's create is answered and recorded (retiring A's link) before A's update leaves.
        await p.send("orders/updated", orderPayload(later(b, "for B")));
        await expect
          .poll(async () => (await p.ctx.links.loadLinks(TEST_SHOP, String(b.id)))?.orderId, {
            timeout: 15_000,
          })
          .toBe(aId);
      });
      await p.send("orders/updated", orderPayload(later(a, "for A")));
      await expectHealed(p, a, b, aId);
      expect(reads.a).toBeGreaterThan(0);
    },
  );

  it.each(["sqlite", "postgres"] as const)(
    "heals both orders when the racing update is answered before the reused ID's create is recorded (%s)",
    async (database) => {
      const reads = { a: 0 };
      let retried: () => void = () => {};
      const aRetried = new Promise<void>((resolve) => {
        retried = resolve;
      });
      const { a, b, aId, p } = await raceSetup(database, async (method, sourceOrderId, phase) => {
        if (method === "recordOrderCreated" && sourceOrderId === String(b.id)) {
          // B's create is answered, but recorded only once A's job has failed and retried (a
          // bounded wait, so that a job that never retries cannot hold the worker's close).
          await Promise.race([aRetried, new Promise((r) => setTimeout(r, 10_000))]);
          return;
        }
        if (method !== "loadLinks" || sourceOrderId !== String(a.id)) return;
        if (phase === "after" && reads.a === 1) {
          await p.send("orders/updated", orderPayload(later(b, "for B")));
          await expect
            .poll(() => p.sandbox.state.orders.find(1001, String(b.id))?.orderId, {
              timeout: 15_000,
            })
            .toBe(aId);
        }
        if (phase === "before" && ++reads.a === 2) {
          retried();
          await expect
            .poll(async () => (await p.ctx.links.loadLinks(TEST_SHOP, String(b.id)))?.orderId, {
              timeout: 15_000,
            })
            .toBe(aId);
        }
      });
      await p.send("orders/updated", orderPayload(later(a, "for A")));
      await expectHealed(p, a, b, aId);
      expect(reads.a).toBeGreaterThan(1);
    },
  );

  it("links an order the provider already holds canceled as canceled when it adopts it, instead of dead-lettering its next change", async () => {
    pipeline = await startPipeline();
    const p = pipeline;
    const a = order(8_800_701);
    await p.send("orders/create", orderPayload(a));
    await p.drain();
    const canceled: ModelOrder = { ...later(a, "before the cancel"), cancelledAt: a.updatedAt };
    await p.send("orders/cancelled", orderPayload(canceled));
    await p.drain();
    const held = structuredClone(p.sandbox.state.orders.find(1001, String(a.id)));
    expect(held?.canceled).toBe(true);
    // The link is retired (a store switched away and back): the next change creates the order,
    // is answered 409 with the one the provider holds, canceled, and adopts it.
    await p.ctx.links.retireOrder(TEST_SHOP, String(a.id), "switched away and back");

    await p.send("orders/updated", orderPayload(later(canceled, "after the cancel")));
    await p.drain();
    expect(await p.ctx.queues.deadLetter.count()).toBe(0);
    expect(p.sandbox.state.orders.find(1001, String(a.id))).toEqual(held);
    const links = await p.ctx.links.loadLinks(TEST_SHOP, String(a.id));
    expect(links?.orderId).toBe(held?.orderId);
    expect(links?.canceledAt).not.toBeNull();
  });

  it("dead-letters at the first answer that names another Shopify order, and writes nothing more", async () => {
    pipeline = await startPipeline();
    const a = order(8_800_401);
    await pipeline.send("orders/create", orderPayload(a));
    await pipeline.drain();
    const aOrder = pipeline.sandbox.state.orders.find(1001, String(a.id));
    // Outside the connector's view, the provider loses A and gives its ID to another order.
    pipeline.sandbox.state.orders.loseEverything();
    const {
      orderId: _drop,
      fulfillments: _f,
      createdOn: _c,
      updatedOn: _u,
      canceled: _x,
      ...body
    } = aOrder as NonNullable<typeof aOrder>;
    const other = pipeline.sandbox.state.orders.create({
      ...body,
      sourceOrderId: "someone-else",
      lineItems: body.lineItems.map(
        ({ orderId: _o, lineItemId: _l, createdOn: _lc, updatedOn: _lu, ...line }) => line,
      ),
    });
    expect(other.orderId).toBe(aOrder?.orderId);
    const linesBefore = structuredClone(other.lineItems);

    // A changes its note and gains a line: an update, then a line-item add.
    const changed = later(a, "must stop here");
    changed.lines.push({
      id: 99,
      variantId: 502,
      sku: "CAP",
      title: "Cap",
      price: 500,
      quantity: 1,
      currentQuantity: 1,
    });
    await pipeline.send("orders/updated", orderPayload(changed));
    await pipeline.drain();
    const [dead] = await pipeline.ctx.queues.deadLetter.getJobs();
    expect(dead?.data).toMatchObject({ orderId: String(a.id), category: "link-mismatch" });
    expect(dead?.data.reason).toBe(
      `link points at another order: provider order ${other.orderId} belongs to Shopify order someone-else, not ${a.id}`,
    );
    // The add never happened: the other order's lines are as they were.
    expect(pipeline.sandbox.state.orders.find(1001, "someone-else")?.lineItems).toEqual(
      linesBefore,
    );
  });
});
