import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import {
  ProviderAuthError,
  ProviderConflictError,
  ProviderConnectionError,
  ProviderNotFoundError,
  ProviderRateLimitError,
  ProviderValidationError,
} from "../../src/provider/index.ts";
import { checkWrite, OrderCreate } from "../../src/provider/schemas.ts";
import type { SourceOrder } from "../../src/sync/index.ts";
import { clientFor, orderBody } from "../helpers/provider-fixtures.ts";
import { mapOk, sourceOrder } from "../sync/factories.ts";

let sandbox: SandboxHandle;
beforeAll(async () => {
  sandbox = await startSandbox({ stores: [1001, 1002], seedRegistrations: 120, rateLimit: 10_000 });
});
afterAll(() => sandbox.close());

describe("orders", () => {
  it("creates an order and reads it back with service IDs for every line item", async () => {
    const { client } = clientFor(sandbox);
    const created = await client.createOrder(orderBody({ sourceOrderId: "o-create" }));
    expect(created.orderId).toBeGreaterThan(0);
    expect(created.lineItems[0]?.lineItemId).toBeGreaterThan(0);
    const read = await client.getOrder(1001, created.orderId);
    expect(read.sourceOrderId).toBe("o-create");
    expect(read.totalMoney).toBe(26.6);
  });

  it("answers a duplicate sourceOrderId with a conflict naming the existing order", async () => {
    const { client } = clientFor(sandbox);
    const first = await client.createOrder(orderBody({ sourceOrderId: "o-dup" }));
    const error = await client
      .createOrder(orderBody({ sourceOrderId: "o-dup" }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderConflictError);
    expect((error as ProviderConflictError).existingOrderId).toBe(first.orderId);
    expect((error as ProviderConflictError).requestId).toMatch(/[0-9a-f-]{36}/);
  });

  it("finds an order again by sourceOrderId (how a lost create is recovered)", async () => {
    const { client } = clientFor(sandbox);
    const created = await client.createOrder(orderBody({ sourceOrderId: "o-find" }));
    expect((await client.findOrderBySourceId(1001, "o-find"))?.orderId).toBe(created.orderId);
    expect(await client.findOrderBySourceId(1001, "o-missing")).toBeNull();
    expect(await client.findOrderBySourceId(1002, "o-find")).toBeNull();
  });

  it("updates an order, keeping the total rule on the stored order", async () => {
    const { client } = clientFor(sandbox);
    const created = await client.createOrder(orderBody());
    const updated = await client.updateOrder(1001, created.orderId, {
      notes: "gift wrap",
      shippingMoney: 7,
      subtotalMoney: 20,
      taxMoney: 1.6,
      totalMoney: 28.6,
    });
    expect(updated?.notes).toBe("gift wrap");
    expect(updated?.totalMoney).toBe(28.6);
  });

  it("refuses an order whose total is not shipping + subtotal + tax, before sending it", async () => {
    const { client } = clientFor(sandbox);
    const before = sandbox.state.arrivals.length;
    const error = await client.createOrder(orderBody({ totalMoney: 30 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderValidationError);
    expect((error as ProviderValidationError).fields.map((f) => f.path)).toContain("totalMoney");
    expect(sandbox.state.arrivals.length).toBe(before);
  });

  it("sends money with at most two decimals, whatever float arithmetic produced", async () => {
    const { client } = clientFor(sandbox);
    const created = await client.createOrder(
      orderBody({
        subtotalMoney: 0.1 + 0.2,
        taxMoney: 0,
        shippingMoney: 0,
        totalMoney: 0.3,
        lineItems: [
          { sourceLineItemId: "x", name: "x", quantity: 1, sku: "x", tax: 0, price: 0.1 + 0.2 },
        ],
      }),
    );
    expect(created.subtotalMoney).toBe(0.3);
    expect(created.lineItems[0]?.price).toBe(0.3);
  });

  it("cancels an order idempotently and refuses changes afterwards", async () => {
    const { client } = clientFor(sandbox);
    const created = await client.createOrder(orderBody());
    const canceled = await client.cancelOrder(1001, created.orderId, {
      canceledReason: "customer",
      sourceCanceledOn: "2026-11-02T10:00:00Z",
    });
    expect(canceled?.sourceCanceledOn).toBe("2026-11-02T10:00:00Z");
    await expect(client.cancelOrder(1001, created.orderId, {})).resolves.toBeTruthy();
    const error = await client
      .updateOrder(1001, created.orderId, { notes: "late" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderConflictError);
    expect((error as ProviderConflictError).code).toBe("order_canceled");
  });

  it("answers 404 for an unknown order and for a store the token does not cover", async () => {
    const { client } = clientFor(sandbox);
    await expect(client.getOrder(1001, 999_999)).rejects.toBeInstanceOf(ProviderNotFoundError);
    await expect(client.getStore(4242)).rejects.toBeInstanceOf(ProviderNotFoundError);
  });

  it("pages the order list forwards and backwards", async () => {
    const { client } = clientFor(sandbox);
    for (let i = 0; i < 5; i++)
      await client.createOrder(orderBody({ storeId: 1002, sourceOrderId: `page-${i}` }));
    const first = await client.listOrders(1002, {
      storeId: 1002,
      first: 2,
      orderBy: "asc",
    } as never);
    expect(first.orders.map((o) => o.sourceOrderId)).toEqual(["page-0", "page-1"]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = await client.listOrders(1002, {
      storeId: 1002,
      first: 2,
      after: first.pageInfo.endCursor ?? "",
      orderBy: "asc",
    } as never);
    expect(second.orders.map((o) => o.sourceOrderId)).toEqual(["page-2", "page-3"]);
    const back = await client.listOrders(1002, {
      storeId: 1002,
      last: 2,
      before: second.pageInfo.startCursor ?? "",
      orderBy: "asc",
    } as never);
    expect(back.orders.map((o) => o.sourceOrderId)).toEqual(["page-0", "page-1"]);
    expect(back.pageInfo.hasPreviousPage).toBe(false);
  });
});

describe("line items and fulfillments", () => {
  it("adds and cancels line items; a second live item for one source line is a conflict", async () => {
    const { client } = clientFor(sandbox);
    const order = await client.createOrder(orderBody());
    const added = await client.addLineItem(1001, order.orderId, {
      sourceLineItemId: "l-2",
      name: "Mug",
      quantity: 1,
      sku: "MUG",
      tax: 0.8,
      price: 12,
    });
    const dup = await client
      .addLineItem(1001, order.orderId, {
        sourceLineItemId: "l-2",
        name: "Mug",
        quantity: 1,
        sku: "MUG",
        tax: 0.8,
        price: 12,
      })
      .catch((e: unknown) => e);
    expect((dup as ProviderConflictError).existingLineItemId).toBe(added.lineItemId);
    const canceled = await client.cancelLineItem(1001, order.orderId, added.lineItemId, {
      sourceCanceledOn: "2026-11-03T00:00:00Z",
    });
    expect(canceled?.sourceCanceledOn).toBe("2026-11-03T00:00:00Z");
    // Replacement after cancel: line items are immutable, a change is cancel + add.
    const replacement = await client.addLineItem(1001, order.orderId, {
      sourceLineItemId: "l-2",
      name: "Mug",
      quantity: 3,
      sku: "MUG",
      tax: 2.4,
      price: 12,
    });
    expect(replacement.lineItemId).not.toBe(added.lineItemId);
  });

  it("upserts fulfillments by sourceFulfillmentId and lists them", async () => {
    const { client } = clientFor(sandbox);
    const order = await client.createOrder(orderBody());
    const first = await client.createFulfillment(1001, order.orderId, {
      sourceFulfillmentId: "f-1",
      fulfillmentLocationId: 7,
      trackingInfoNumber: "1Z1",
      shipmentStatus: "in_transit",
    });
    expect(first.created).toBe(true);
    const again = await client.createFulfillment(1001, order.orderId, {
      sourceFulfillmentId: "f-1",
      fulfillmentLocationId: 7,
      trackingInfoNumber: "1Z2",
      shipmentStatus: "delivered",
    });
    expect(again.created).toBe(false);
    expect(again.fulfillment.fulfillmentId).toBe(first.fulfillment.fulfillmentId);
    const list = await client.listFulfillments(1001, order.orderId);
    expect(list).toHaveLength(1);
    expect(list[0]?.trackingInfoNumber).toBe("1Z2");
  });

  it("refuses a fulfillment date without an offset before sending", async () => {
    const { client } = clientFor(sandbox);
    const error = await client
      .createFulfillment(1001, 1, {
        sourceFulfillmentId: "f",
        fulfillmentLocationId: 1,
        inTransitOn: "2026-11-01T10:00:00",
      })
      .catch((e: unknown) => e);
    expect((error as ProviderValidationError).fields[0]?.path).toBe("inTransitOn");
  });
});

describe("stores, products, registrations", () => {
  it("reads a store's currency and time zone", async () => {
    const { client } = clientFor(sandbox);
    expect(await client.getStore(1002)).toMatchObject({
      storeId: 1002,
      currencyCode: "USD",
      ianaTimezone: "America/New_York",
    });
  });

  it("follows the product state machine: 201, 200 by handle, removed variants restored with their id, idempotent delete", async () => {
    const { client } = clientFor(sandbox);
    const variants = [
      {
        options: [
          { name: "Color", value: "Red" },
          { name: "Size", value: "S" },
        ],
        sku: "R-S",
        price: "10.00",
      },
      {
        options: [
          { name: "Color", value: "Blue" },
          { name: "Size", value: "S" },
        ],
        sku: "B-S",
        price: "10.00",
      },
    ];
    const first = await client.createProduct({
      handle: "legacy-tee",
      storeId: 1001,
      title: "Tee",
      variants,
    });
    expect(first.created).toBe(true);
    expect(first.product.options?.map((o) => [o.name, o.position])).toEqual([
      ["Color", 1],
      ["Size", 2],
    ]);
    const blueId = first.product.variants.find((v) => v.sku === "B-S")?.variantId;
    const second = await client.createProduct({
      handle: "legacy-tee",
      storeId: 1001,
      title: "Tee",
      variants: [variants[0] as never],
    });
    expect(second.created).toBe(false);
    expect(second.product.productId).toBe(first.product.productId);
    expect(second.product.variants).toHaveLength(1);
    // Identity is the option values, whatever their order.
    const back = await client.replaceProduct(first.product.productId, {
      storeId: 1001,
      variants: [
        variants[0] as never,
        {
          options: [
            { name: "Size", value: "S" },
            { name: "Color", value: "Blue" },
          ],
          sku: "B-S",
        },
      ],
    });
    expect(back.variants.find((v) => v.sku === "B-S")?.variantId).toBe(blueId);
    expect(back.title ?? undefined).toBeUndefined();
    await client.deleteProduct(first.product.productId);
    await client.deleteProduct(first.product.productId);
    const deleted = await client.getProduct(first.product.productId);
    expect(deleted.deletedOn).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(deleted.variants).toEqual([]);
    const revived = await client.createProduct({ handle: "legacy-tee", storeId: 1001, variants });
    expect(revived.product.productId).toBe(first.product.productId);
  });

  it("refuses bad prices, comma tags and option-less variants without a sku, naming the field", async () => {
    const { client } = clientFor(sandbox);
    const cases: [unknown, string][] = [
      [{ handle: "p", variants: [{ options: [], sku: "a", price: "$10" }] }, "variants.0.price"],
      [{ handle: "p", tags: ["a,b"], variants: [{ options: [], sku: "a" }] }, "tags.0"],
      [{ handle: "p", variants: [{ options: [] }] }, "variants.0.options"],
      [{ handle: "p", variants: [] }, "variants"],
    ];
    for (const [body, path] of cases) {
      const error = await client.createProduct(body as never).catch((e: unknown) => e);
      expect((error as ProviderValidationError).fields.map((f) => f.path)).toContain(path);
    }
  });

  it("answers 404 for a product synced from the platform", async () => {
    const { client } = clientFor(sandbox);
    const platform = sandbox.state.products.all.find((p) => !p.createdViaApi);
    await expect(client.getProduct(platform?.productId ?? 0)).rejects.toBeInstanceOf(
      ProviderNotFoundError,
    );
  });

  it("lists registrations with filters and pages both ways, clamping page size to 100", async () => {
    const { client } = clientFor(sandbox);
    const big = await client.listRegistrations({ storeId: 1001, first: 500 });
    expect(big.registrations).toHaveLength(100);
    const page1 = await client.listRegistrations({ storeId: 1001, first: 10, orderBy: "asc" });
    const page2 = await client.listRegistrations({
      storeId: 1001,
      first: 10,
      after: page1.pageInfo.endCursor ?? "",
      orderBy: "asc",
    });
    expect(page2.registrations[0]?.registrationId).toBe(
      (page1.registrations[9]?.registrationId ?? 0) + 1,
    );
    const prev = await client.listRegistrations({
      storeId: 1001,
      last: 10,
      before: page2.pageInfo.startCursor ?? "",
      orderBy: "asc",
    });
    expect(prev.registrations.map((r) => r.registrationId)).toEqual(
      page1.registrations.map((r) => r.registrationId),
    );
    const filtered = await client.listRegistrations({
      storeId: 1001,
      customerEmail: "customer3@example.com",
    });
    expect(filtered.registrations.length).toBeGreaterThan(0);
    expect(filtered.registrations.every((r) => r.customerEmail === "customer3@example.com")).toBe(
      true,
    );
  });
});

describe("authentication and limits", () => {
  it("shares one token between two clients (two processes) through Redis", async () => {
    let tokenCalls = 0;
    const counting: typeof fetch = (input, init) => {
      if (String(input).endsWith("/oauth/token")) tokenCalls++;
      return fetch(input, init);
    };
    const a = clientFor(sandbox, { prefix: "shared-token", fetch: counting });
    const b = clientFor(sandbox, { prefix: "shared-token", fetch: counting });
    await a.redis.del(...(await a.redis.keys("shared-token:*")), "none");
    await Promise.all([
      a.client.getStore(1001),
      b.client.getStore(1001),
      a.client.getStore(1002),
      b.client.getStore(1002),
    ]);
    expect(tokenCalls).toBe(1);
  });

  it("renews a token when less than five minutes remain", async () => {
    const shortLived = await startSandbox({ tokenTtlSeconds: 240 });
    onTestFinished(() => shortLived.close());
    let tokenCalls = 0;
    const counting: typeof fetch = (input, init) => {
      if (String(input).endsWith("/oauth/token")) tokenCalls++;
      return fetch(input, init);
    };
    const { client } = clientFor(shortLived, { fetch: counting });
    await client.getStore(1001);
    await client.getStore(1001);
    expect(tokenCalls).toBe(2);
  });

  it("exposes the store_id and scope claims of the token", async () => {
    const { client } = clientFor(sandbox);
    const info = await client.getTokenInfo();
    expect(info.storeIds).toEqual([1001, 1002]);
    expect(info.scopes).toContain("write:orders");
  });

  it("rejects wrong client credentials as a configuration error", async () => {
    const { client } = clientFor(sandbox, { clientSecret: "wrong" });
    const error = await client.getStore(1001).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderAuthError);
    expect((error as ProviderAuthError).kind).toBe("invalid_client");
    expect((error as ProviderAuthError).retryable).toBe(false);
  });

  it("answers 401 without or with a bad token, and 403 when a scope is missing", async () => {
    const raw = await fetch(`${sandbox.url}/stores/1001`);
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toMatch(/Bearer/);
    const bad = await fetch(`${sandbox.url}/stores/1001`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(bad.status).toBe(401);
    const expired = await sandbox.issueToken({ expiresInSeconds: -10 });
    const exp = await fetch(`${sandbox.url}/stores/1001`, {
      headers: { authorization: `Bearer ${expired}` },
    });
    expect(((await exp.json()) as { error: { message: string } }).error.message).toMatch(/expired/);
    const readOnly = await sandbox.issueToken({ scopes: ["read:orders"] });
    const forbidden = await fetch(`${sandbox.url}/stores/1001`, {
      headers: { authorization: `Bearer ${readOnly}` },
    });
    expect(forbidden.status).toBe(403);
    expect(((await forbidden.json()) as { error: { code: string } }).error.code).toBe(
      "insufficient_scope",
    );
  });

  it("maps a missing scope to ProviderAuthError for a client whose grant lacks it", async () => {
    sandbox.addClient("reader", "reader-secret", [1001], ["read:orders"]);
    const { client } = clientFor(sandbox, {
      clientId: "reader",
      clientSecret: "reader-secret",
    });
    const error = await client.createOrder(orderBody()).catch((e: unknown) => e);
    expect((error as ProviderAuthError).kind).toBe("insufficient_scope");
    expect((error as ProviderAuthError).status).toBe(403);
  });

  it("answers 429 with Retry-After and RateLimit headers once the store's budget is spent", async () => {
    const tight = await startSandbox({ rateLimit: 3, windowMs: 60_000 });
    onTestFinished(() => tight.close());
    const seen: number[] = [];
    const { client } = clientFor(tight, {
      onResponse: (info) => seen.push(info.rateLimit?.remaining ?? -1),
    });
    for (let i = 0; i < 3; i++) await client.getStore(1001);
    expect(seen).toEqual([2, 1, 0]);
    const error = await client.getStore(1001).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRateLimitError);
    expect((error as ProviderRateLimitError).retryAfterMs).toBeGreaterThanOrEqual(59_000);
    expect((error as ProviderRateLimitError).retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(tight.state.maxInAnyWindow(1001, 60_000)).toBe(3);
  });

  it("reports a dropped answer after commit as a connection error that may have been committed", async () => {
    const flaky = await startSandbox({ faults: { dropAfterCommitRate: 1 } });
    onTestFinished(() => flaky.close());
    const { client } = clientFor(flaky);
    const error = await client
      .createOrder(orderBody({ sourceOrderId: "dropped" }))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderConnectionError);
    expect((error as ProviderConnectionError).maybeCommitted).toBe(true);
    expect(flaky.state.orders.find(1001, "dropped")).toBeDefined();
  });
});

describe("timeouts", () => {
  it("gives up on an answer slower than the timeout, as a connection error that may have been committed", async () => {
    const slow = await startSandbox({ faults: { slowRate: 1, slowMs: 1_500 } });
    onTestFinished(() => slow.close());
    // The token request is slow too: let it through, then time out the order write.
    const { client, redis } = clientFor(slow, { timeoutMs: 3_000 });
    await client.getTokenInfo();
    const quick = clientFor(slow, { timeoutMs: 300, redis });
    const started = Date.now();
    const error = await quick.client
      .createOrder(orderBody({ sourceOrderId: "too-slow" }))
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(1_400);
    expect(error).toBeInstanceOf(ProviderConnectionError);
    expect((error as ProviderConnectionError).message).toMatch(/timed out after 300 ms/);
    expect((error as ProviderConnectionError).maybeCommitted).toBe(true);
  });
});

describe("token renewal", () => {
  it("renews a token the provider refuses (401) once, then succeeds", async () => {
    const { createHash } = await import("node:crypto");
    const prefix = `renew-${Date.now()}`;
    const { client, redis } = clientFor(sandbox, { prefix });
    const id = createHash("sha256")
      .update(`${sandbox.authUrl}\n${sandbox.clientId}\n${sandbox.audience}`)
      .digest("hex")
      .slice(0, 24);
    // A token that looks fresh to the cache but that the provider no longer accepts.
    const revoked = {
      token: "revoked-token",
      expiresAt: Date.now() + 3_600_000,
      storeIds: [1001],
      scopes: [],
    };
    await redis.set(`${prefix}:token:${id}`, JSON.stringify(revoked));
    const before = sandbox.state.counters.tokenRequests;
    await expect(client.getStore(1001)).resolves.toMatchObject({ storeId: 1001 });
    expect(sandbox.state.counters.tokenRequests).toBe(before + 1);
    expect(JSON.parse((await redis.get(`${prefix}:token:${id}`)) ?? "{}").token).not.toBe(
      "revoked-token",
    );
  });
});

describe("write bodies checked once", () => {
  it("sends an order the mapping checked after one check of the contract, not two", async () => {
    const { client } = clientFor(sandbox);
    const checks = vi.spyOn(OrderCreate, "safeParse");
    onTestFinished(() => checks.mockRestore());
    const { order } = mapOk(sourceOrder({ id: "5901" as SourceOrder["id"] }));
    const created = await client.createOrder(order);
    expect(created.sourceOrderId).toBe("5901");
    expect(checks).toHaveBeenCalledTimes(1);
  });

  it("keeps a checked body frozen, so what was checked is what is sent", () => {
    const checked = checkWrite(OrderCreate, orderBody());
    if (!checked.success) throw new Error("the fixture must pass");
    expect(Object.isFrozen(checked.data)).toBe(true);
    expect(Object.isFrozen(checked.data.lineItems[0])).toBe(true);
    expect(() => {
      (checked.data as { totalMoney: number }).totalMoney = 30;
    }).toThrow(TypeError);
  });

  it("checks a changed copy of a checked body again, and refuses it before sending", async () => {
    const { client } = clientFor(sandbox);
    const checked = checkWrite(OrderCreate, orderBody());
    if (!checked.success) throw new Error("the fixture must pass");
    const before = sandbox.state.arrivals.length;
    const error = await client
      .createOrder({ ...checked.data, totalMoney: 30 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderValidationError);
    expect((error as ProviderValidationError).fields.map((f) => f.path)).toContain("totalMoney");
    expect(sandbox.state.arrivals.length).toBe(before);
  });
});
