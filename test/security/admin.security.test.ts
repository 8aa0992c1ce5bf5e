import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/cli/webhook-command.ts";
import { captureLogs } from "../helpers/captured-logs.ts";
import { scanLogs } from "../helpers/log-scan.ts";
import { type Pipeline, SHOPIFY_SECRET, startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";

/**
 * The operator's surface read without ADMIN_TOKEN: with no token configured, with none sent, with
 * a wrong or nearly right one, through path spellings that might slip past the guard. Each
 * pipeline holds a dead letter whose raw payload carries a customer's email, so "read nothing"
 * is checked against data that is really there (the last test reads it with the token).
 */
const TOKEN = "admin-security-token-5b1f0c9e7d";
const EMAIL = "admin.leak.check@example.com";
const UNUSABLE = `{"id": 4242, "email": "${EMAIL}", "line_items": [`;

const GETS = [
  "/admin/api",
  "/admin/api/status",
  "/admin/api/dead-letters",
  "/admin/api/dead-letters/counts",
  `/admin/api/shops/${TEST_SHOP}/backfill`,
  "/admin/queues",
  "/admin/queues/api/queues",
  "/admin/queues/api/queues?activeQueue=dead-letter&status=waiting",
];
const WRITES: [string, string][] = [
  ["POST", "/admin/api/dead-letters/retry"],
  ["POST", `/admin/api/shops/${TEST_SHOP}/resync`],
  ["POST", `/admin/api/shops/${TEST_SHOP}/backfill`],
];
const SPELLINGS = [
  "/admin//api/dead-letters",
  "/admin/api/dead-letters/",
  "/admin/./api/dead-letters",
  "/admin/%61pi/dead-letters",
  "/Admin/api/dead-letters",
  "/admin/api/dead-letters?token=",
  "//admin/api/dead-letters",
];

interface Setup {
  pipeline: Pipeline;
  deadLetterId: string;
}
async function setup(env: Record<string, string>, logs: ReturnType<typeof captureLogs>) {
  const pipeline = await startPipeline({ env, logDestination: logs.destination });
  const signed = signWebhook({
    topic: "orders/create",
    shop: TEST_SHOP,
    body: UNUSABLE,
    secret: SHOPIFY_SECRET,
  });
  const response = await pipeline.web.app.request("/webhooks/shopify", {
    method: "POST",
    headers: signed.headers,
    body: signed.body,
  });
  expect(response.status).toBe(200);
  const [dead] = await pipeline.ctx.queues.deadLetter.getJobs(["waiting"]);
  expect(dead?.data.rawPayload).toContain(EMAIL);
  return { pipeline, deadLetterId: String(dead?.id) } satisfies Setup;
}

async function expectNothingRead(s: Setup, response: Response, label: string) {
  // 429: so many wrong tokens that the client is throttled (the admin login guard).
  expect([401, 403, 404, 429], label).toContain(response.status);
  const text = await response.text();
  expect(text, label).not.toContain(EMAIL);
  expect(text, label).not.toContain(s.deadLetterId);
  expect(text, label).not.toContain("4242");
}

const allRequests = (s: Setup) => [
  ...GETS.map((path) => ["GET", path] as [string, string]),
  ["GET", `/admin/api/dead-letters/${encodeURIComponent(s.deadLetterId)}`] as [string, string],
  ["POST", `/admin/api/dead-letters/${encodeURIComponent(s.deadLetterId)}/retry`] as [
    string,
    string,
  ],
  ["DELETE", `/admin/api/dead-letters/${encodeURIComponent(s.deadLetterId)}`] as [string, string],
  ...WRITES,
  ...SPELLINGS.map((path) => ["GET", path] as [string, string]),
];

const logs = captureLogs("admin-security");
let closed: Setup;
let guarded: Setup;
beforeAll(async () => {
  closed = await setup({}, logs);
  guarded = await setup({ ADMIN_TOKEN: TOKEN }, logs);
});
afterAll(async () => {
  await closed?.pipeline.close();
  await guarded?.pipeline.close();
  logs.remove();
});

describe("admin API, dashboard and their writes without ADMIN_TOKEN", () => {
  it("reads and changes nothing when no ADMIN_TOKEN is configured, whatever is sent", async () => {
    for (const [method, path] of allRequests(closed)) {
      for (const authorization of [
        undefined,
        "Bearer ",
        `Bearer ${TOKEN}`,
        "Basic YWRtaW46YWRtaW4=",
      ]) {
        const response = await closed.pipeline.web.app.request(path, {
          method,
          headers: authorization ? { authorization } : {},
        });
        await expectNothingRead(closed, response, `${method} ${path} ${authorization ?? ""}`);
      }
    }
    expect(await closed.pipeline.ctx.queues.deadLetter.count()).toBe(1);
    expect(await closed.pipeline.ctx.queues.sync.count()).toBe(0);
  });

  it("reads and changes nothing without the right token when one is configured", async () => {
    const wrong = [
      undefined,
      "Bearer",
      "Bearer ",
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.toUpperCase()}`,
      `Basic ${Buffer.from(`admin:${TOKEN}`).toString("base64")}`,
      `Token ${TOKEN}`,
    ];
    for (const [method, path] of allRequests(guarded)) {
      for (const authorization of wrong) {
        const response = await guarded.pipeline.web.app.request(path, {
          method,
          headers: authorization ? { authorization } : {},
        });
        await expectNothingRead(guarded, response, `${method} ${path} ${authorization ?? ""}`);
      }
    }
    // A token in the query string opens a browser session on GET only, never a write.
    for (const [method, path] of allRequests(guarded).filter(([m]) => m !== "GET")) {
      const response = await guarded.pipeline.web.app.request(`${path}?token=${TOKEN}`, { method });
      await expectNothingRead(guarded, response, `${method} ${path}?token=`);
    }
    // A session cookie that was not signed with the token's key.
    const forged = await guarded.pipeline.web.app.request("/admin/api/dead-letters", {
      headers: { cookie: `connector_admin=${Date.now() + 3_600_000}.Zm9yZ2Vk` },
    });
    await expectNothingRead(guarded, forged, "forged cookie");
    expect(await guarded.pipeline.ctx.queues.deadLetter.count()).toBe(1);
    expect(await guarded.pipeline.ctx.queues.sync.count()).toBe(0);
  });

  it("does read the dead letter with the token: the data the checks above protect is there", async () => {
    // The wrong tokens above throttled this client (one address for app.request): its 15
    // minutes are over.
    const redis = guarded.pipeline.ctx.redis;
    const keys = await redis.keys(`${guarded.pipeline.ctx.prefix}:admin-login*`);
    if (keys.length > 0) await redis.del(...keys);
    const response = await guarded.pipeline.web.app.request(
      `/admin/api/dead-letters/${encodeURIComponent(guarded.deadLetterId)}`,
      { headers: { authorization: `Bearer ${TOKEN}` } },
    );
    expect(response.status).toBe(200);
    expect(await response.text()).toContain(guarded.deadLetterId);
  });

  it("keeps customer data out of /metrics", async () => {
    for (const s of [closed, guarded]) {
      const response = await s.pipeline.web.app.request("/metrics");
      const text = await response.text();
      expect(text).not.toContain(EMAIL);
      expect(text).not.toContain("4242");
    }
  });

  it("logs none of the tokens, secrets or customer data it was sent", () => {
    const leaks = scanLogs(
      [{ source: "admin-security", text: logs.read() }],
      [
        { kind: "admin token", value: TOKEN },
        { kind: "shopify secret", value: SHOPIFY_SECRET },
        { kind: "email", value: EMAIL },
      ],
    );
    expect(leaks).toEqual([]);
  });
});
