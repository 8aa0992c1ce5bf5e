import { type SandboxHandle, startSandbox } from "@connector/provider-sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let sandbox: SandboxHandle;
let token: string;
beforeAll(async () => {
  sandbox = await startSandbox({ stores: [1001, 1002], seedRegistrations: 2, control: true });
  token = await sandbox.issueToken();
});
afterAll(() => sandbox.close());

const add = (body: unknown) =>
  fetch(`${sandbox.authUrl}/_sandbox/registrations`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

const list = async (query: string) => {
  const res = await fetch(`${sandbox.url}/registrations?${query}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return (await res.json()) as {
    registrations: { registrationId: number; externalId: string; createdOn: string }[];
  };
};

describe("the sandbox's control route for registrations", () => {
  it("adds registrations a harness in another process can then list, newest first", async () => {
    const res = await add({
      storeId: 1001,
      registrations: [
        {
          externalId: "REG-A",
          customerEmail: "a@example.com",
          customerName: "A",
          channelName: "web",
          lineItems: [{ sku: "S-1", name: "Shoe", quantity: 2 }],
          createdOn: "2026-05-01T09:00:00+02:00",
        },
        { externalId: "REG-B", customerEmail: "b@example.com", channelName: "retail" },
      ],
    });
    expect(res.status).toBe(201);
    const added = (await res.json()) as { registrations: { registrationId: number }[] };
    // The store's next IDs, after its two seeded ones.
    expect(added.registrations.map((r) => r.registrationId)).toEqual([100100003, 100100004]);
    const listed = await list("storeId=1001&first=10");
    expect(listed.registrations.map((r) => r.externalId)).toEqual([
      "REG-B",
      "REG-A",
      "REG-1001-2",
      "REG-1001-1",
    ]);
    expect(listed.registrations[1]?.createdOn).toBe("2026-05-01T07:00:00.000Z");
    // The other store is untouched.
    expect((await list("storeId=1002")).registrations).toHaveLength(2);
  });

  it("refuses a body it cannot record, naming the field", async () => {
    const base = { externalId: "X", customerEmail: "x@example.com", channelName: "web" };
    const cases: [unknown, string][] = [
      [{ storeId: 9999, registrations: [base] }, "storeId"],
      [
        { storeId: 1001, registrations: [{ ...base, createdOn: "2026-05-01T09:00:00" }] },
        "createdOn",
      ],
      [{ storeId: 1001, registrations: [{ ...base, nickname: "y" }] }, "registrations"],
      [{ storeId: 1001, registrations: [] }, "registrations"],
    ];
    for (const [body, field] of cases) {
      const res = await add(body);
      expect(res.status).toBe(400);
      const { error } = (await res.json()) as { error: { path: (string | number)[] }[] };
      expect(error.map((e) => e.path.join("."))).toEqual([expect.stringContaining(field)]);
    }
    expect((await list("storeId=1001&first=100")).registrations).toHaveLength(4);
  });
});
