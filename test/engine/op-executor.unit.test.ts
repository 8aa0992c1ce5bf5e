import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { executeOp, LinkMismatchError, type OpContext } from "../../src/engine/op-executor.ts";
import {
  type Order,
  ProviderConflictError,
  type ProviderOrderId,
  ProviderRateLimitError,
  type ProviderStoreId,
} from "../../src/provider/index.ts";
import {
  createLinkRepository,
  type Db,
  type LinkRepository,
  openDatabase,
} from "../../src/store/index.ts";
import { orderHashOf, planSync, type SyncOp } from "../../src/sync/index.ts";
import { orderBody } from "../helpers/provider-fixtures.ts";
import { ScriptedProvider } from "../helpers/scripted-provider.ts";

// The op executor's branches, one at a time, through its narrow deps: a provider whose every
// answer is scripted (and whose calls are recorded), and the real link repository on a
// throwaway SQLite file. The integration and chaos suites run the same code against the sandbox.

const STORE = 1001 as ProviderStoreId;
const at = (method: string, path: string) => ({ method, path });
const SHOP = "unit.myshopify.com";

/** The provider's answer for an order created from `body`: service IDs assigned. */
function providerOrder(body: ReturnType<typeof orderBody>, orderId = 501): Order {
  return {
    ...body,
    orderId,
    lineItems: body.lineItems.map((line, i) => ({ ...line, orderId, lineItemId: 9000 + i })),
  } as Order;
}

let dir: string;
let db: Db;
let links: LinkRepository;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "op-executor-"));
  db = openDatabase(join(dir, "links.sqlite"));
  links = createLinkRepository(db);
});

afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

function setUp() {
  const body = orderBody({ sourceOrderId: "5001", orderName: "#1001" });
  const [create] = planSync({ order: body, fulfillments: [], canceled: null }, null);
  if (create?.kind !== "createOrder") throw new Error("the plan starts with the create");
  const ctx: OpContext = {
    shop: SHOP,
    sourceOrderId: body.sourceOrderId,
    orderName: "#1001",
    storeId: STORE,
    providerBaseUrl: "https://provider.test/v1",
    orderId: null,
    customerEmail: "ada@example.com",
  };
  return { body, create, ctx };
}

/** Runs the create once, successfully: the order is linked as provider order 501. */
async function created() {
  const { body, create, ctx } = setUp();
  const provider = new ScriptedProvider().answer("createOrder", providerOrder(body));
  await executeOp(provider.client, links, create, ctx);
  return { body, ctx: { ...ctx, orderId: 501 as ProviderOrderId } };
}

describe("executeOp: createOrder", () => {
  it("creates the order and links it and its line items", async () => {
    const { body, create, ctx } = setUp();
    const provider = new ScriptedProvider().answer("createOrder", providerOrder(body));
    const result = await executeOp(provider.client, links, create, ctx);
    expect(result.orderId).toBe(501);
    expect(provider.called("findOrderBySourceId")).toBe(0);
    const linked = await links.loadLinks(SHOP, "5001");
    expect(linked?.orderId).toBe(501);
    expect(linked?.lineItems.map((l) => Number(l.lineItemId))).toEqual([9000]);
  });

  it("after an attempt whose answer was lost, looks the order up instead of creating it again", async () => {
    const { body, create, ctx } = setUp();
    await links.beginIntent(SHOP, "5001", create.key, create.kind); // the lost attempt
    const provider = new ScriptedProvider().answer("findOrderBySourceId", providerOrder(body, 777));
    const result = await executeOp(provider.client, links, create, ctx);
    expect(provider.called("createOrder")).toBe(0);
    expect(result.orderId).toBe(777);
    expect((await links.loadLinks(SHOP, "5001"))?.orderId).toBe(777);
  });

  it("after a lost attempt that never reached the provider, creates the order", async () => {
    const { body, create, ctx } = setUp();
    await links.beginIntent(SHOP, "5001", create.key, create.kind);
    const provider = new ScriptedProvider()
      .answer("findOrderBySourceId", null)
      .answer("createOrder", providerOrder(body));
    expect((await executeOp(provider.client, links, create, ctx)).orderId).toBe(501);
    expect(provider.called("createOrder")).toBe(1);
  });

  it("adopts the existing order a duplicate conflict names", async () => {
    const { body, create, ctx } = setUp();
    const conflict = new ProviderConflictError("duplicate", {
      ...at("POST", "/orders"),
      status: 409,
      code: "duplicate_order",
      existingOrderId: 612,
    });
    const provider = new ScriptedProvider()
      .answer("createOrder", conflict)
      .answer("getOrder", providerOrder(body, 612));
    expect((await executeOp(provider.client, links, create, ctx)).orderId).toBe(612);
    expect(provider.calls.find((c) => c.method === "getOrder")?.args).toEqual([STORE, 612]);
  });

  it("rethrows a conflict whose order cannot be found, and links nothing", async () => {
    const { create, ctx } = setUp();
    const conflict = new ProviderConflictError("duplicate", {
      ...at("POST", "/orders"),
      status: 409,
      code: "duplicate_order",
    });
    const provider = new ScriptedProvider()
      .answer("createOrder", conflict)
      .answer("findOrderBySourceId", null);
    await expect(executeOp(provider.client, links, create, ctx)).rejects.toBe(conflict);
    expect(await links.loadLinks(SHOP, "5001")).toBeNull();
  });

  it("a 429 costs the next attempt no lookup: the intent is taken back", async () => {
    const { body, create, ctx } = setUp();
    const refused = new ProviderRateLimitError("slow down", {
      ...at("POST", "/orders"),
      status: 429,
    });
    const first = new ScriptedProvider().answer("createOrder", refused);
    await expect(executeOp(first.client, links, create, ctx)).rejects.toBe(refused);
    const second = new ScriptedProvider().answer("createOrder", providerOrder(body));
    await executeOp(second.client, links, create, ctx);
    expect(second.called("findOrderBySourceId")).toBe(0);
  });

  it("trusts an adopted order's hash only when it holds every field we meant to send", async () => {
    const { body, create, ctx } = setUp();
    await links.beginIntent(SHOP, "5001", create.key, create.kind);
    const older = providerOrder({ ...body, shippingMoney: 4, totalMoney: 25.6 }, 777);
    const provider = new ScriptedProvider().answer("findOrderBySourceId", older);
    await executeOp(provider.client, links, create, ctx);
    const linked = await links.loadLinks(SHOP, "5001");
    expect(linked?.orderHash).toBe("");
    // The next plan therefore updates the order to what Shopify holds.
    const next = planSync({ order: body, fulfillments: [], canceled: null }, linked);
    expect(next.map((op) => op.kind)).toContain("updateOrder");
  });
});

describe("executeOp: operations on a linked order", () => {
  it("refuses an update answered for another Shopify order: the link points elsewhere", async () => {
    const { body, ctx } = await created();
    const update: SyncOp = {
      kind: "updateOrder",
      key: "update:1",
      body: { notes: "gift" },
      orderHash: "h-1",
      replaces: (await links.loadLinks(SHOP, "5001"))?.orderHash ?? "",
    };
    const provider = new ScriptedProvider().answer("updateOrder", {
      ...providerOrder(body),
      sourceOrderId: "9999",
    });
    await expect(executeOp(provider.client, links, update, ctx)).rejects.toBeInstanceOf(
      LinkMismatchError,
    );
    expect((await links.loadLinks(SHOP, "5001"))?.orderHash).not.toBe("h-1");
  });

  it("records an update's hash once the provider accepted it", async () => {
    const { body, ctx } = await created();
    const update: SyncOp = {
      kind: "updateOrder",
      key: "update:2",
      body: { notes: "gift" },
      orderHash: "h-2",
      replaces: (await links.loadLinks(SHOP, "5001"))?.orderHash ?? "",
    };
    const provider = new ScriptedProvider().answer("updateOrder", providerOrder(body));
    await executeOp(provider.client, links, update, ctx);
    expect((await links.loadLinks(SHOP, "5001"))?.orderHash).toBe("h-2");
  });

  it("sends an update again when another order's write reached its provider order while it was under way", async () => {
    // The order's fields are what the update sends; the stored hash is an older one.
    const { body, ctx } = await created();
    await links.forgetOrderHash(SHOP, "5001", 501);
    const planned = planSync(
      { order: body, fulfillments: [], canceled: null },
      await links.loadLinks(SHOP, "5001"),
    );
    const update = planned.find((op) => op.kind === "updateOrder");
    expect(update).toBeDefined();
    // While the update is at the provider, another order's job finds its own write (sent through
    // this provider ID, which the provider had reused) answered for this order: it forgets this
    // order's hash (healReusedId). That write may have landed after this update.
    const provider = new ScriptedProvider().answer("updateOrder", async () => {
      await links.forgetOrderHash(SHOP, "5001", 501);
      return providerOrder(body);
    });
    await executeOp(provider.client, links, update as SyncOp, ctx);
    // The update's record leaves the forgotten hash: the next plan sends the fields once more.
    const after = await links.loadLinks(SHOP, "5001");
    expect(after?.orderHash).not.toBe(orderHashOf(body));
    expect(
      planSync({ order: body, fulfillments: [], canceled: null }, after).map((op) => op.kind),
    ).toContain("updateOrder");
  });

  it("adopts the line item a duplicate conflict names instead of adding a second", async () => {
    const { ctx } = await created();
    const add: SyncOp = {
      kind: "addLineItem",
      key: "add:l-2",
      sourceLineItemId: "l-2",
      body: { sourceLineItemId: "l-2", name: "Cap", quantity: 1, sku: "CAP", tax: 0, price: 8 },
      hash: "line-h",
    };
    const conflict = new ProviderConflictError("duplicate line", {
      ...at("POST", "/orders/501/line-items"),
      status: 409,
      code: "duplicate_line_item",
      existingLineItemId: 9100,
    });
    const provider = new ScriptedProvider().answer("addLineItem", conflict);
    await executeOp(provider.client, links, add, ctx);
    const line = (await links.loadLinks(SHOP, "5001"))?.lineItems.find(
      (l) => l.sourceLineItemId === "l-2",
    );
    expect(Number(line?.lineItemId)).toBe(9100);
  });

  it("links the fulfillment the provider answers with", async () => {
    const { ctx } = await created();
    const fulfil: SyncOp = {
      kind: "upsertFulfillment",
      key: "fulfil:f-1",
      sourceFulfillmentId: "f-1",
      body: { sourceFulfillmentId: "f-1", fulfillmentLocationId: 1 },
      hash: "f-h",
    };
    const provider = new ScriptedProvider().answer("createFulfillment", {
      fulfillment: { fulfillmentId: 3300, sourceFulfillmentId: "f-1", fulfillmentLocationId: 1 },
      created: true,
    });
    await executeOp(provider.client, links, fulfil, ctx);
    const linked = (await links.loadLinks(SHOP, "5001"))?.fulfillments.find(
      (f) => f.sourceFulfillmentId === "f-1",
    );
    expect(Number(linked?.fulfillmentId)).toBe(3300);
  });

  it("never calls the provider for an order operation planned before the order exists", async () => {
    const { ctx } = setUp();
    const cancel: SyncOp = { kind: "cancelOrder", key: "cancel", body: {} };
    const provider = new ScriptedProvider();
    await expect(executeOp(provider.client, links, cancel, ctx)).rejects.toThrow(
      /before the order exists/,
    );
    expect(provider.calls).toEqual([]);
  });
});
