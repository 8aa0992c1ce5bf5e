import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { type ShopifyStandInHandle, startShopifyStandIn } from "@connector/shopify-standin";
import { afterEach, describe, expect, it } from "vitest";
import { type ModelOrder, orderPayload } from "../../helpers/shopify-order-builder.ts";

const SHOP = "stand-in-test.myshopify.com";
const SECRET = "stand-in-secret";
const TOKEN = "shpat_stand_in_test";

const model = (id: number, updatedAt: string, overrides: Partial<ModelOrder> = {}): ModelOrder => ({
  id,
  number: 1000 + id,
  email: "grace@example.com",
  createdAt: "2026-11-01T10:00:00Z",
  updatedAt,
  cancelledAt: null,
  note: null,
  shippingCents: 500,
  taxBps: 800,
  lines: [
    {
      id: id * 10,
      variantId: 501,
      sku: "TS-1",
      title: "T-shirt",
      price: 1000,
      quantity: 2,
      currentQuantity: 2,
    },
  ],
  fulfillments: [],
  locationId: 4001,
  ...overrides,
});

let standIn: ShopifyStandInHandle;
let receiver: Server | undefined;
afterEach(async () => {
  await standIn?.close();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  receiver = undefined;
});

async function gql(query: string, variables: Record<string, unknown> = {}, token = TOKEN) {
  const response = await fetch(`${standIn.url}/admin/api/2026-10/graphql.json`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-shopify-access-token": token },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as GraphqlBody };
}

interface GraphqlBody {
  // The tests read the fields they asked for; each casts to the shape it expects.
  data: Record<string, Record<string, unknown>>;
  errors?: { message: string; extensions?: { code?: string } }[];
  extensions: {
    cost: {
      requestedQueryCost: number;
      actualQueryCost: number | null;
      throttleStatus: { maximumAvailable: number; currentlyAvailable: number; restoreRate: number };
    };
  };
}

interface Page<T> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

describe("stand-in Shopify Admin GraphQL", () => {
  it("refuses a request without the shop's access token", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const answer = await gql("{ orders(first: 1) { nodes { id } } }", {}, "shpat_wrong");
    expect(answer.status).toBe(401);
    expect(standIn.state.counters.unauthorized).toBe(1);
  });

  it("pages orders updated after a date, oldest first, with the cost extension", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    for (let i = 1; i <= 5; i++) {
      await standIn.upsertOrder(SHOP, orderPayload(model(i, `2026-11-0${i}T12:00:00Z`)), {
        deliver: false,
      });
    }
    const query = `query ($after: String) {
      orders(first: 2, after: $after, sortKey: UPDATED_AT, query: "updated_at:>'2026-11-01T12:00:00Z'") {
        nodes { id legacyResourceId name updatedAt currentTotalPriceSet { shopMoney { amount currencyCode } } }
        pageInfo { hasNextPage endCursor }
      }
    }`;
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const answer = await gql(query, { after });
      const orders = answer.body.data.orders as unknown as Page<{ name: string }>;
      seen.push(...orders.nodes.map((n) => n.name));
      after = orders.pageInfo.hasNextPage ? orders.pageInfo.endCursor : null;
      pages++;
      expect(answer.body.extensions.cost.requestedQueryCost).toBe(2 + 2 * (1 + 1 + 1));
      expect(answer.body.extensions.cost.throttleStatus.maximumAvailable).toBe(2000);
    } while (after);
    expect(seen).toEqual(["#1002", "#1003", "#1004", "#1005"]);
    expect(pages).toBe(2);
  });

  it("answers THROTTLED without running the query when the bucket cannot pay for it", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      throttledStatus: 429,
      shops: [{ shop: SHOP, accessToken: TOKEN, maximumAvailable: 100, restoreRate: 10 }],
    });
    const answer = await gql("{ orders(first: 100) { nodes { id } } }");
    expect(answer.status).toBe(429);
    expect(answer.body.errors?.[0]?.extensions?.code).toBe("THROTTLED");
    expect(answer.body.extensions.cost.requestedQueryCost).toBe(102);
    expect(standIn.state.counters.throttled).toBe(1);
    const cheaper = await gql("{ orders(first: 10) { nodes { id } } }");
    expect(cheaper.status).toBe(200);
    // Nothing came back, so the actual cost (2) is all that was kept.
    expect(cheaper.body.extensions.cost.actualQueryCost).toBe(2);
  });

  it("finds an order by name and translates the REST record to Admin GraphQL fields", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    await standIn.upsertOrder(SHOP, orderPayload(model(7, "2026-11-03T12:00:00Z")), {
      deliver: false,
    });
    const answer = await gql(`{
      orders(first: 1, query: "name:#1007") {
        nodes { id cancelReason currencyCode customer { email } shippingAddress { countryCodeV2 }
          lineItems(first: 5) { nodes { id sku currentQuantity originalUnitPriceSet { shopMoney { amount } } } } }
      }
    }`);
    const node = (answer.body.data.orders as unknown as Page<unknown>).nodes[0];
    expect(node).toMatchObject({
      id: "gid://shopify/Order/7",
      cancelReason: null,
      currencyCode: "USD",
      customer: { email: "grace@example.com" },
      shippingAddress: { countryCodeV2: "US" },
      lineItems: {
        nodes: [
          {
            id: "gid://shopify/LineItem/70",
            sku: "TS-1",
            currentQuantity: 2,
            originalUnitPriceSet: { shopMoney: { amount: "10.00" } },
          },
        ],
      },
    });
  });
});

describe("stand-in Shopify webhooks", () => {
  it("signs each delivery with the app secret and skips it when told not to deliver", async () => {
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
    });
    const received: { headers: IncomingHttpHeaders; body: string }[] = [];
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        res.end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver?.listen(0, "127.0.0.1", () => resolve()));
    const address = receiver.address();
    const uri = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/webhooks`;
    for (const topic of ["ORDERS_CREATE", "ORDERS_UPDATED"]) {
      const created = await gql(
        `mutation ($topic: WebhookSubscriptionTopic!, $uri: String!) {
          webhookSubscriptionCreate(topic: $topic, webhookSubscription: { uri: $uri }) {
            webhookSubscription { id topic uri } userErrors { message }
          }
        }`,
        { topic, uri },
      );
      expect(created.body.data.webhookSubscriptionCreate?.userErrors).toEqual([]);
    }

    const first = orderPayload(model(9, "2026-11-03T12:00:00Z"));
    await standIn.upsertOrder(SHOP, first);
    await standIn.upsertOrder(
      SHOP,
      { ...first, updated_at: "2026-11-04T12:00:00Z" },
      { deliver: false },
    );
    await standIn.upsertOrder(SHOP, { ...first, updated_at: "2026-11-05T12:00:00Z" });

    expect(received.map((r) => r.headers["x-shopify-topic"])).toEqual([
      "orders/create",
      "orders/updated",
    ]);
    for (const r of received) {
      const expected = createHmac("sha256", SECRET).update(r.body, "utf8").digest("base64");
      expect(r.headers["x-shopify-hmac-sha256"]).toBe(expected);
      expect(r.headers["x-shopify-shop-domain"]).toBe(SHOP);
    }
    expect(JSON.parse(received[1]?.body ?? "{}").updated_at).toBe("2026-11-05T12:00:00Z");
    const listed = await gql("{ webhookSubscriptions(first: 10) { nodes { topic uri } } }");
    expect(listed.body.data.webhookSubscriptions?.nodes).toHaveLength(2);
  });
});

describe("the stand-in's tokens lapse as Shopify's do", () => {
  const SHOP_QUERY = "query { shop { currencyCode } }";
  /** The stand-in's token endpoint, as `@shopify/shopify-api` calls it. */
  const tokenCall = async (body: Record<string, unknown>) => {
    const response = await fetch(`${standIn.url}/admin/oauth/access_token`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-host": SHOP },
      body: JSON.stringify({ client_secret: SECRET, ...body }),
    });
    return {
      status: response.status,
      body: (await response.json()) as { access_token?: string; refresh_token?: string },
    };
  };
  const migrate = () =>
    tokenCall({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      subject_token: TOKEN,
      subject_token_type: "urn:shopify:params:oauth:token-type:offline-access-token",
      requested_token_type: "urn:shopify:params:oauth:token-type:offline-access-token",
      expiring: "1",
    });
  const DAY = 86_400_000;

  async function started(options: { nonExpiringRefusedFrom?: number } = {}) {
    let offset = 0;
    standIn = await startShopifyStandIn({
      apiSecret: SECRET,
      shops: [{ shop: SHOP, accessToken: TOKEN }],
      now: () => Date.now() + offset,
      ...options,
    });
    return { advance: (ms: number) => (offset += ms) };
  }

  it("ends a refresh token after 90 days on its clock", async () => {
    const clock = await started();
    const { body: pair } = await migrate();
    const refresh = (token = pair.refresh_token) =>
      tokenCall({ grant_type: "refresh_token", refresh_token: token });
    clock.advance(89 * DAY);
    const fresh = await refresh();
    expect(fresh.status).toBe(200);
    // The new one lives 90 days from its own issue: an idle shop's ends after them.
    clock.advance(91 * DAY);
    expect((await refresh(fresh.body.refresh_token)).status).toBe(400);
  });

  it("refuses a migrated token for the Admin API and answers its retry with the same pair for 7 days", async () => {
    const clock = await started();
    expect((await gql(SHOP_QUERY)).status).toBe(200);
    const first = await migrate();
    expect(first.status).toBe(200);
    expect((await gql(SHOP_QUERY)).status).toBe(401);
    expect((await gql(SHOP_QUERY, {}, first.body.access_token)).status).toBe(200);
    clock.advance(6 * DAY);
    const retry = await migrate();
    expect(retry.body).toMatchObject({
      access_token: first.body.access_token,
      refresh_token: first.body.refresh_token,
    });
    clock.advance(2 * DAY);
    expect((await migrate()).status).toBe(400);
  });

  it("refuses non-expiring tokens, and their migration, from the deadline it is given", async () => {
    const clock = await started({ nonExpiringRefusedFrom: Date.now() + DAY });
    expect((await gql(SHOP_QUERY)).status).toBe(200);
    clock.advance(2 * DAY);
    expect((await gql(SHOP_QUERY)).status).toBe(401);
    expect((await migrate()).status).toBe(400);
  });
});
