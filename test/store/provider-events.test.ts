import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import {
  ClaimRepository,
  type ClaimUpdate,
  createLinkRepository,
  type Db,
  type NewProviderEvent,
  openDatabase,
  ProviderEventRepository,
  ProviderWebhookSecretRepository,
  ShopRepository,
} from "../../src/store/index.ts";
import { createTestDatabase } from "../helpers/postgres.ts";

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
  postgres: async () => openDatabase(await createTestDatabase(inject("postgresUrl"))),
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
});
