import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { ClaimRepository, type ClaimUpdate } from "../../src/features/claims/repository.ts";
import {
  createLinkRepository,
  type Db,
  type NewProviderEvent,
  openDatabase,
  ProviderEventRepository,
  ProviderWebhookSecretRepository,
  ShopRepository,
} from "../../src/store/index.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

const opened: Db[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const ENGINES = {
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), "connector-events-"));
    dirs.push(dir);
    return openDatabase(join(dir, "c.sqlite"));
  },
  postgres: async () => openDatabase(await createTestDatabase(service("postgresUrl"))),
};

async function store(engine: keyof typeof ENGINES) {
  const db = await ENGINES[engine]();
  opened.push(db);
  await db.ready();
  return {
    db,
    events: new ProviderEventRepository(db),
    claims: new ClaimRepository(db),
    secrets: new ProviderWebhookSecretRepository(db),
    shops: new ShopRepository(db),
    links: createLinkRepository(db),
  };
}

const BASE = "https://api.provider.test/v1";
const SPACE = { providerBaseUrl: BASE, storeId: 1001 };
const event = (eventId: string, over: Partial<NewProviderEvent> = {}): NewProviderEvent => ({
  providerBaseUrl: BASE,
  storeId: 1001,
  eventId,
  shops: ["a.myshopify.com"],
  topic: "claim/created",
  kind: "claim",
  apiVersion: "v1",
  sentAt: "2026-11-20T10:00:00.000Z",
  payload: JSON.stringify({ claimId: 1 }),
  ...over,
});
const claim = (over: Partial<ClaimUpdate> = {}): ClaimUpdate => ({
  shop: "a.myshopify.com",
  kind: "claim",
  claimId: "5001",
  externalId: "CLM-5001",
  status: "open",
  orderId: 42,
  sourceOrderId: "7001",
  orderName: "#1001",
  updatedOn: "2026-11-20T10:00:00.000Z",
  eventId: "e1",
  ...over,
});

describe.each(["sqlite", "postgres"] as const)("provider events and claims on %s", (engine) => {
  it("stores an event once per ID, store and environment; a replay finds the first row", async () => {
    const { events } = await store(engine);
    const first = await events.record(event("e1"));
    expect(first).toMatchObject({ duplicate: false, processed: false });
    expect(await events.record(event("e1"))).toEqual({
      id: first.id,
      duplicate: true,
      processed: false,
    });
    // The same ID about another store, or in another environment, is another event.
    expect((await events.record(event("e1", { storeId: 1002 }))).duplicate).toBe(false);
    expect(
      (await events.record(event("e1", { providerBaseUrl: "https://staging.test/v1" }))).duplicate,
    ).toBe(false);

    expect(await events.unprocessed(10)).toContain(first.id);
    expect(await events.markProcessed(first.id, "claim 1 open")).toBe(true);
    expect(await events.markProcessed(first.id, "again")).toBe(false);
    expect((await events.record(event("e1"))).processed).toBe(true);
    expect((await events.get(first.id))?.outcome).toBe("claim 1 open");
    expect(await events.unprocessed(10)).not.toContain(first.id);
  });

  it("lists a store's events newest first, by kind, with registrations unwrapped", async () => {
    const { events } = await store(engine);
    await events.record(event("u1", { kind: "unknown", topic: "return/created" }));
    await events.record(
      event("r1", {
        kind: "registration",
        topic: "registration/created",
        payload: JSON.stringify({ data: { registrationId: 9, customerEmail: "a@example.com" } }),
      }),
    );
    expect((await events.recent(SPACE)).map((e) => e.eventId)).toEqual(["r1", "u1"]);
    expect((await events.recent(SPACE, { kinds: ["unknown"] })).map((e) => e.eventId)).toEqual([
      "u1",
    ]);
    const [registration] = await events.recentRegistrationEvents(SPACE);
    expect(registration?.registration).toEqual({
      registrationId: 9,
      customerEmail: "a@example.com",
    });
    expect(await events.recent({ ...SPACE, storeId: 1002 })).toEqual([]);
  });

  it("keeps a claim's newest state: an older update changes nothing, a missing field keeps its value", async () => {
    const { claims } = await store(engine);
    expect(await claims.applyIfNewer(claim())).toMatchObject({ status: "open" });
    const newer = await claims.applyIfNewer(
      claim({
        status: "approved",
        externalId: null,
        orderId: null,
        updatedOn: "2026-11-20T12:00:00.000Z",
        eventId: "e3",
      }),
    );
    expect(newer).toMatchObject({ status: "approved", externalId: "CLM-5001", orderId: 42 });
    expect(
      await claims.applyIfNewer(
        claim({ status: "in_review", updatedOn: "2026-11-20T11:00:00.000Z", eventId: "e2" }),
      ),
    ).toBeNull();
    const [stored] = await claims.listForShop("a.myshopify.com");
    expect(stored).toMatchObject({ status: "approved", lastEventId: "e3" });
    // An event that says no status keeps the stored one.
    await claims.applyIfNewer(
      claim({ status: null, updatedOn: "2026-11-20T13:00:00.000Z", eventId: "e4" }),
    );
    expect((await claims.listForShop("a.myshopify.com"))[0]?.status).toBe("approved");

    await claims.setTagged(
      "a.myshopify.com",
      [{ kind: "claim", claimId: "5001", taggedStatus: "approved" }],
      null,
    );
    expect((await claims.claimsOfOrder("a.myshopify.com", "7001"))[0]).toMatchObject({
      taggedStatus: "approved",
      tagError: null,
    });
    expect(await claims.tagsOrders("a.myshopify.com")).toBe(false);
    await claims.setTagOrders("a.myshopify.com", true);
    expect(await claims.tagsOrders("a.myshopify.com")).toBe(true);
  });

  it("finds the Shopify order of a provider order through the shop's links", async () => {
    const { claims, links } = await store(engine);
    await links.recordOrderCreated({
      shop: "a.myshopify.com",
      sourceOrderId: "7001",
      storeId: 1001,
      providerBaseUrl: BASE,
      orderId: 42,
      orderName: "#1001",
      orderHash: "h",
      key: "create",
      lineItems: [],
    });
    const found = { sourceOrderId: "7001", orderId: 42, orderName: "#1001" };
    const none = { orderId: null, sourceOrderId: null, orderName: null };
    expect(await claims.findOrder("a.myshopify.com", SPACE, { ...none, orderId: 42 })).toEqual(
      found,
    );
    expect(
      await claims.findOrder("a.myshopify.com", SPACE, { ...none, sourceOrderId: "7001" }),
    ).toEqual(found);
    expect(
      await claims.findOrder("a.myshopify.com", SPACE, { ...none, orderName: "1001" }),
    ).toEqual(found);
    // Another store or environment, or another shop: not this link.
    expect(
      await claims.findOrder(
        "a.myshopify.com",
        { ...SPACE, storeId: 1002 },
        { ...none, orderId: 42 },
      ),
    ).toBeNull();
    expect(
      await claims.findOrder(
        "a.myshopify.com",
        { ...SPACE, providerBaseUrl: "https://staging.test/v1" },
        { ...none, orderId: 42 },
      ),
    ).toBeNull();
    expect(await claims.findOrder("b.myshopify.com", SPACE, { ...none, orderId: 42 })).toBeNull();
  });

  it("keeps one webhook secret per provider account, and finds the shops bound to a store", async () => {
    const { secrets, events, shops } = await store(engine);
    const account = { providerBaseUrl: BASE, clientId: "c1" };
    expect(await secrets.get(account)).toBeNull();
    await secrets.set(account, "v2:sealed-1");
    await secrets.set(account, "v2:sealed-2");
    expect(await secrets.get(account)).toBe("v2:sealed-2");
    expect(await secrets.get({ ...account, clientId: "c2" })).toBeNull();
    expect(await secrets.list()).toEqual([{ ...account, sealed: "v2:sealed-2" }]);

    await shops.upsertShop("a.myshopify.com", { storeId: 1001, providerClientId: "c1" });
    await shops.upsertShop("b.myshopify.com", { storeId: 1001, providerClientId: "c2" });
    await shops.upsertShop("c.myshopify.com", { storeId: 1002, providerClientId: "c1" });
    await shops.upsertShop("d.myshopify.com", { storeId: 1001, providerClientId: "c1" });
    await shops.setStatus("d.myshopify.com", "uninstalled");
    expect((await events.shopsOnStore(1001)).map((s) => s.shop).sort()).toEqual([
      "a.myshopify.com",
      "b.myshopify.com",
    ]);
  });

  it("deletes a shop's claims and claim settings with its data (shop/redact)", async () => {
    const { claims, shops } = await store(engine);
    await shops.upsertShop("a.myshopify.com", { storeId: 1001 });
    await claims.applyIfNewer(claim());
    await claims.setTagOrders("a.myshopify.com", true);
    await shops.deleteShopData("a.myshopify.com");
    expect(await claims.listForShop("a.myshopify.com")).toEqual([]);
    expect(await claims.tagsOrders("a.myshopify.com")).toBe(false);
  });

  it("reduces a customer's event bodies to their IDs: by email, Shopify order, provider order or name", async () => {
    const { db, events } = await store(engine);
    const t = db.t.providerEvents;
    const reg = {
      registrationId: 77,
      storeId: 1001,
      externalId: "REG-77",
      customerEmail: "Grace@Example.com",
      customerName: "Grace Hopper",
      updatedOn: "2026-11-20T10:00:00.000Z",
    };
    await events.record(
      event("by-email", { kind: "registration", payload: JSON.stringify({ data: reg }) }),
    );
    const claim = (over: Record<string, unknown>) =>
      JSON.stringify({ claimId: 5, status: "open", customerName: "Grace Hopper", ...over });
    await events.record(
      event("by-order", { payload: claim({ sourceOrderId: "gid://shopify/Order/5001" }) }),
    );
    await events.record(event("by-provider-order", { payload: claim({ orderId: 42 }) }));
    await events.record(event("by-name", { payload: claim({ orderName: "1001" }) }));
    await events.record(
      event("other", { payload: claim({ sourceOrderId: "5003", email: "ada@example.com" }) }),
    );
    await events.record(
      event("other-store", {
        storeId: 2002,
        shops: ["z.myshopify.com"],
        payload: JSON.stringify({ email: "grace@example.com" }),
      }),
    );

    const redacted = await events.redactCustomer(
      { shop: "a.myshopify.com", storeId: 1001 },
      {
        emails: ["grace@example.com"],
        sourceOrderIds: ["5001"],
        providerOrderIds: [42],
        orderNames: ["#1001"],
      },
    );
    expect(redacted).toBe(4);
    const rows = await db.orm.select().from(t).orderBy(t.id);
    const byId = Object.fromEntries(rows.map((r) => [r.eventId, r]));
    for (const id of ["by-email", "by-order", "by-provider-order", "by-name"]) {
      expect(byId[id]?.payload.toLowerCase()).not.toContain("grace");
      expect(byId[id]?.redactedAt).not.toBeNull();
      expect(byId[id]?.topic).toBe("claim/created");
    }
    expect(JSON.parse(byId["by-email"]?.payload ?? "")).toEqual({
      redacted: "customer",
      registrationId: "77",
      externalId: "REG-77",
      updatedOn: "2026-11-20T10:00:00.000Z",
    });
    expect(JSON.parse(byId["by-order"]?.payload ?? "")).toMatchObject({
      redacted: "customer",
      claimId: "5",
      status: "open",
      sourceOrderId: "gid://shopify/Order/5001",
    });
    // Another customer's event, and a store the shop is not on, keep their bodies.
    expect(byId.other?.payload).toContain("ada@example.com");
    expect(byId.other?.redactedAt).toBeNull();
    expect(byId["other-store"]?.payload).toContain("grace@example.com");
    // The registrations view still finds the registration's IDs.
    const [view] = await events.recentRegistrationEvents(SPACE);
    expect(view?.registration).toMatchObject({ registrationId: "77", externalId: "REG-77" });
    // A second request finds nothing left to do.
    expect(
      await events.redactCustomer(
        { shop: "a.myshopify.com", storeId: 1001 },
        { emails: ["grace@example.com"], sourceOrderIds: [], providerOrderIds: [], orderNames: [] },
      ),
    ).toBe(0);
  });

  it("forgets a redacted shop: its sole store's events go, a shared store's stay for the others", async () => {
    const { db, events } = await store(engine);
    const t = db.t.providerEvents;
    await events.record(event("sole", { storeId: 3003, shops: ["a.myshopify.com"] }));
    await events.record(event("shared-both", { shops: ["a.myshopify.com", "b.myshopify.com"] }));
    await events.record(event("shared-a-only", { shops: ["a.myshopify.com"] }));
    await events.record(event("shared-b-only", { shops: ["b.myshopify.com"] }));
    const others: Record<number, string[]> = { 1001: ["b.myshopify.com"], 3003: [] };
    const result = await events.forgetShop(
      { shop: "a.myshopify.com", storeId: 1001 },
      async (id) => others[id] ?? [],
    );
    expect(result).toEqual({ deleted: 2, kept: 2 });
    const rows = await db.orm.select().from(t).orderBy(t.id);
    expect(rows.map((r) => [r.eventId, JSON.parse(r.shops)])).toEqual([
      ["shared-both", ["b.myshopify.com"]],
      ["shared-b-only", ["b.myshopify.com"]],
    ]);
  });

  it("prunes bodies received before the cutoff, keeping the rows and the newer bodies", async () => {
    const { db, events } = await store(engine);
    const t = db.t.providerEvents;
    const old = await events.record(
      event("old", { payload: JSON.stringify({ claimId: 9, customerEmail: "old@example.com" }) }),
    );
    const fresh = await events.record(
      event("new", { payload: JSON.stringify({ claimId: 10, customerEmail: "new@example.com" }) }),
    );
    await events.markProcessed(old.id, "claim 9 open");
    await db.orm.update(t).set({ receivedAt: "2026-01-01T00:00:00.000Z" }).where(eq(t.id, old.id));
    expect(await events.pruneBodies(new Date("2026-03-01T00:00:00.000Z"))).toBe(1);
    const pruned = await events.get(old.id);
    expect(pruned).toMatchObject({
      eventId: "old",
      topic: "claim/created",
      outcome: "claim 9 open",
    });
    expect(pruned?.redactedAt).not.toBeNull();
    expect(JSON.parse(pruned?.payload ?? "")).toEqual({ redacted: "retention", claimId: "9" });
    const kept = await events.get(fresh.id);
    expect(kept?.payload).toContain("new@example.com");
    expect(kept?.redactedAt).toBeNull();
    expect(await events.pruneBodies(new Date("2026-03-01T00:00:00.000Z"))).toBe(0);
  });
});
