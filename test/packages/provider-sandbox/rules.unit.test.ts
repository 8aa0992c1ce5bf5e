import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { orderBody } from "../../helpers/provider-fixtures.ts";

let sandbox: SandboxHandle;
let token: string;
beforeAll(async () => {
  sandbox = await startSandbox({ stores: [1001], rateLimit: 10_000 });
  token = await sandbox.issueToken();
});
afterAll(() => sandbox.close());

async function post(path: string, body: unknown) {
  const response = await fetch(`${sandbox.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as { error?: { code: string; fields?: { path: string }[] } },
  };
}

describe("sandbox validation (raw HTTP, not through the client)", () => {
  const cases: [string, unknown, string][] = [
    ["total mismatch", orderBody({ totalMoney: 1 }), "totalMoney"],
    ["unknown property", { ...orderBody(), discountMoney: 3 }, ""],
    [
      "no email and no phone",
      orderBody({ customer: { sourceCustomerId: "c", firstName: "A", lastName: "B" } }),
      "customer.email",
    ],
    [
      "phone not E.164",
      orderBody({
        customer: { sourceCustomerId: "c", firstName: "A", lastName: "B", phone: "555-0100" },
      }),
      "customer.phone",
    ],
    [
      "date without offset",
      orderBody({ sourceCreatedOn: "2026-11-01T10:00:00" }),
      "sourceCreatedOn",
    ],
    ["no line items", orderBody({ lineItems: [] }), "lineItems"],
    ["missing shipping address", { ...orderBody(), shippingAddress: undefined }, "shippingAddress"],
    [
      "country not alpha-2",
      orderBody({
        billingAddress: {
          line1: "x",
          city: "y",
          stateOrProvinceCode: "z",
          postalCode: "1",
          countryCode: "USA",
        },
      }),
      "billingAddress.countryCode",
    ],
    ["negative money", orderBody({ shippingMoney: -5, totalMoney: 16.6 }), "shippingMoney"],
  ];
  for (const [name, body, field] of cases) {
    it(`answers 400 naming the field for ${name}`, async () => {
      const { status, body: answer } = await post("/orders", body);
      expect(status).toBe(400);
      expect(answer.error?.code).toBe("validation_error");
      expect(answer.error?.fields?.map((f) => f.path)).toContain(field);
    });
  }

  it("answers 400 for a body that is not JSON", async () => {
    const { status, body } = await post("/orders", "{not json");
    expect(status).toBe(400);
    expect(body.error?.code).toBe("validation_error");
  });

  it("rounds money to 2 digits on storage", async () => {
    const { status } = await post(
      "/orders",
      orderBody({
        sourceOrderId: "round",
        shippingMoney: 5.004,
        subtotalMoney: 20,
        taxMoney: 1.6,
        totalMoney: 26.6,
      }),
    );
    expect(status).toBe(201);
    expect(sandbox.state.orders.find(1001, "round")?.shippingMoney).toBe(5);
  });

  it("marks an order protected when a line carries the store's protection variant", async () => {
    const guarded = await startSandbox({ protectionVariantIds: { 1001: ["999"] } });
    onTestFinished(() => guarded.close());
    const t = await guarded.issueToken();
    const body = orderBody({ sourceOrderId: "p" });
    body.lineItems.push({
      sourceLineItemId: "p-1",
      variantId: "999",
      name: "Protection",
      quantity: 1,
      sku: "PROT",
      tax: 0,
      price: 0,
    });
    const response = await fetch(`${guarded.url}/orders`, {
      method: "POST",
      headers: { authorization: `Bearer ${t}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(((await response.json()) as { isShippingProtected: boolean }).isShippingProtected).toBe(
      true,
    );
  });
});

describe("sandbox rate limit", () => {
  it("never admits more than the limit in any rolling window, under concurrent load", async () => {
    const limited = await startSandbox({ rateLimit: 20, windowMs: 500 });
    onTestFinished(() => limited.close());
    const t = await limited.issueToken();
    const statuses: number[] = [];
    const deadline = Date.now() + 1_600;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < deadline) {
          const r = await fetch(`${limited.url}/stores/1001`, {
            headers: { authorization: `Bearer ${t}` },
          });
          statuses.push(r.status);
          if (r.status === 429)
            expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
          expect(r.headers.get("ratelimit-limit")).toBe("20");
          await r.arrayBuffer();
        }
      }),
    );
    expect(statuses).toContain(429);
    expect(limited.state.maxInAnyWindow(1001, 500)).toBe(20);
  });

  it("counts out-of-band use by another client against the same store", async () => {
    const shared = await startSandbox({ rateLimit: 5, windowMs: 60_000 });
    onTestFinished(() => shared.close());
    const t = await shared.issueToken();
    shared.consume(1001, 4);
    const ok = await fetch(`${shared.url}/stores/1001`, {
      headers: { authorization: `Bearer ${t}` },
    });
    expect(ok.headers.get("ratelimit-remaining")).toBe("0");
    const refused = await fetch(`${shared.url}/stores/1001`, {
      headers: { authorization: `Bearer ${t}` },
    });
    expect(refused.status).toBe(429);
  });

  it("limits the token endpoint on its own", async () => {
    const s = await startSandbox({ tokenRateLimit: 2 });
    onTestFinished(() => s.close());
    const ask = () =>
      fetch(`${s.authUrl}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          grant_type: "client_credentials",
          client_id: s.clientId,
          client_secret: s.clientSecret,
          audience: s.audience,
        }),
      });
    expect((await ask()).status).toBe(200);
    expect((await ask()).status).toBe(200);
    const third = await ask();
    expect(third.status).toBe(429);
    // Whole seconds to wait, at least one (a header that merely exists would pass on "0" or "").
    expect(third.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
  });
});

describe("sandbox faults", () => {
  it("injects 500s and extra 429s at the configured share, repeatably", async () => {
    const s = await startSandbox({
      rateLimit: 10_000,
      faults: { errorRate: 0.3, extra429Rate: 0.2, seed: 42 },
    });
    onTestFinished(() => s.close());
    const t = await s.issueToken();
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await fetch(`${s.url}/stores/1001`, { headers: { authorization: `Bearer ${t}` } });
      statuses.push(r.status);
    }
    const share = (code: number) => statuses.filter((x) => x === code).length / statuses.length;
    expect(share(429)).toBeGreaterThan(0.1);
    expect(share(429)).toBeLessThan(0.3);
    expect(share(500)).toBeGreaterThan(0.15);
    expect(share(200)).toBeGreaterThan(0.4);
  });
});

describe("sandbox tokens", () => {
  it("refuses a token it accepted before once the token expires", async () => {
    // Expiry is in whole seconds: this token lives between one and two seconds.
    const shortLived = await sandbox.issueToken({ expiresInSeconds: 2 });
    const get = async () =>
      fetch(`${sandbox.url}/stores/1001`, { headers: { authorization: `Bearer ${shortLived}` } });
    expect((await get()).status).toBe(200);
    // The second use is answered from the verified-token cache, the expiry still checked.
    expect((await get()).status).toBe(200);
    // Refused once it has expired (within two seconds), however late the machine gets there.
    await expect
      .poll(async () => (await get()).status, { timeout: 10_000, interval: 100 })
      .toBe(401);
    const late = await get();
    expect(late.status).toBe(401);
    expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(
      /expired/,
    );
  });

  it("refuses a token signed by another sandbox even after its own were accepted", async () => {
    const other = await startSandbox({ stores: [1001] });
    try {
      const foreign = await other.issueToken();
      const response = await fetch(`${sandbox.url}/stores/1001`, {
        headers: { authorization: `Bearer ${foreign}` },
      });
      expect(response.status).toBe(401);
    } finally {
      await other.close();
    }
  });
});
