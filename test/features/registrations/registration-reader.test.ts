import { type SandboxHandle, type SandboxOptions, startSandbox } from "@connector/provider-sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreRateLimiter } from "../../../src/engine/limiter/index.ts";
import { ProviderClients } from "../../../src/engine/provider-clients.ts";
import {
  RegistrationReader,
  RegistrationsUnavailableError,
} from "../../../src/features/registrations/index.ts";
import { parseInstantText } from "../../../src/lib/instant.ts";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import type { Registration } from "../../../src/provider/index.ts";
import type { ShopRecord } from "../../../src/store/index.ts";
import { captureLogs } from "../../helpers/captured-logs.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";

const SEEDED = 120;
/** Seeded registration i (1…120) of store 1001 was created at 2026-01-01T00:00Z + i hours. */
const createdAt = (i: number) => Date.UTC(2026, 0, 1) + i * 3_600_000;
const idOf = (i: number) => 1001 * 100_000 + i;

let p: Pipeline;
const logs = captureLogs("registrations");
const extra: SandboxHandle[] = [];
let shopCount = 0;

beforeAll(async () => {
  p = await startPipeline({
    sandbox: { seedRegistrations: SEEDED },
    logDestination: logs.destination,
  });
});
afterAll(async () => {
  await p.close();
  for (const s of extra) await s.close();
  logs.remove();
});

const reader = (maxWaitMs = 10_000) => new RegistrationReader(p.ctx, { maxWaitMs });
const testShop = async () => (await p.ctx.shops.getShop(TEST_SHOP)) as ShopRecord;

/** A shop of its own whose provider is a sandbox started with these options. */
async function shopOn(options: SandboxOptions, storeId = 1001) {
  const sandbox = await startSandbox({
    stores: [storeId],
    rateLimit: 100_000,
    seedRegistrations: SEEDED,
    ...options,
  });
  extra.push(sandbox);
  const domain = `variant-${++shopCount}.myshopify.com`;
  await p.ctx.shops.upsertShop(domain, {
    storeId,
    providerClientId: sandbox.clientId,
    providerClientSecretSealed: p.ctx.secrets.seal(
      sandbox.clientSecret,
      sealedFor.providerClientSecret(domain),
    ),
    providerBaseUrl: sandbox.url,
    providerAuthUrl: sandbox.authUrl,
    providerAudience: sandbox.audience,
    storeCurrency: "USD",
  });
  return { sandbox, shop: (await p.ctx.shops.getShop(domain)) as ShopRecord };
}

async function collect(it: AsyncIterable<Registration>): Promise<Registration[]> {
  const out: Registration[] = [];
  for await (const r of it) out.push(r);
  return out;
}

const listCalls = (sandbox: SandboxHandle) =>
  sandbox.state.arrivals.filter((a) => a.path === "/v1/registrations");

describe("paging", () => {
  it("walks every page newest first with after/first, and back again with before/last", async () => {
    const shop = await testShop();
    const r = reader();
    const forward = [];
    let request: { after?: string } = {};
    for (;;) {
      const page = await r.page(shop, { size: 25, ...request });
      forward.push(page);
      if (!page.next) break;
      request = { after: page.next };
    }
    expect(forward.map((pg) => pg.registrations.length)).toEqual([25, 25, 25, 25, 20]);
    const ids = forward.flatMap((pg) => pg.registrations.map((x) => x.registrationId));
    expect(ids).toEqual(Array.from({ length: SEEDED }, (_, k) => idOf(SEEDED - k)));
    expect(forward[0]?.previous).toBeNull();
    expect(forward.at(-1)?.next).toBeNull();

    // Previous from the last page leads through the same pages backward.
    const backward = [forward.at(-1)];
    let before = forward.at(-1)?.previous;
    while (before) {
      const page = await r.page(shop, { size: 25, before });
      backward.unshift(page);
      before = page.previous ?? undefined;
    }
    expect(backward.map((pg) => pg?.registrations.map((x) => x.registrationId))).toEqual(
      forward.map((pg) => pg.registrations.map((x) => x.registrationId)),
    );

    // The generator backward from the last page's start: every page before it, nearest first.
    const pages = [];
    for await (const page of r.pages(shop, {
      direction: "backward",
      cursor: forward.at(-1)?.previous ?? undefined,
      size: 50,
    })) {
      pages.push(page.map((x) => x.registrationId));
    }
    expect(pages.map((pg) => pg.length)).toEqual([50, 50]);
    expect(pages.flat().sort((a, b) => b - a)).toEqual(ids.slice(0, 100));
  });

  it("asks for 100 at most a page, and follows hasNextPage when the provider clamps lower", async () => {
    const shop = await testShop();
    const before = listCalls(p.sandbox).length;
    const all = await collect(reader().list(shop, { limit: 500 }));
    expect(all).toHaveLength(SEEDED);
    // 500 asked, 100 a page: two calls for 120.
    expect(listCalls(p.sandbox).length - before).toBe(2);

    const clamped = await shopOn({ registrationListing: { maxPageSize: 30 } });
    const rows = await collect(reader().list(clamped.shop));
    expect(new Set(rows.map((x) => x.registrationId)).size).toBe(SEEDED);
    expect(listCalls(clamped.sandbox)).toHaveLength(4);
  });

  it("--limit stops after that many, asking no more than needed", async () => {
    const shop = await testShop();
    const before = listCalls(p.sandbox).length;
    const rows = await collect(reader().list(shop, { limit: 7 }));
    expect(rows.map((x) => x.registrationId)).toEqual(
      Array.from({ length: 7 }, (_, k) => idOf(SEEDED - k)),
    );
    expect(listCalls(p.sandbox).length - before).toBe(1);
  });

  it("offers Next and Previous from where a page was reached when pageInfo is Relay-style", async () => {
    const { shop } = await shopOn({ registrationListing: { pageInfo: "relay" } });
    const r = reader();
    const first = await r.page(shop, { size: 40 });
    const second = await r.page(shop, { size: 40, after: first.next ?? "" });
    // Reached forward: the provider says hasPreviousPage false, but the first page is there.
    expect(second.previous).not.toBeNull();
    const back = await r.page(shop, { size: 40, before: second.previous ?? "" });
    expect(back.registrations.map((x) => x.registrationId)).toEqual(
      first.registrations.map((x) => x.registrationId),
    );
    // Reached backward: hasNextPage false from the provider, but the second page follows.
    expect(back.next).not.toBeNull();
    expect(back.previous).toBeNull();
  });

  it("reads an answer without pageInfo, or a bare array, as one page", async () => {
    for (const pageInfo of ["missing", "bare"] as const) {
      const { shop, sandbox } = await shopOn({ registrationListing: { pageInfo } });
      const rows = await collect(reader().list(shop));
      expect(rows.map((x) => x.registrationId)).toEqual(
        Array.from({ length: 100 }, (_, k) => idOf(SEEDED - k)),
      );
      expect(listCalls(sandbox)).toHaveLength(1);
      const page = await reader().page(shop, { size: 10 });
      expect(page.registrations).toHaveLength(10);
      expect([page.next, page.previous]).toEqual([null, null]);
    }
  });

  it("stops with a clear error when the provider hands back the same page again", async () => {
    const { shop } = await shopOn({ registrationListing: { stuckCursor: true } });
    const seen: number[] = [];
    const error = await (async () => {
      try {
        for await (const r of reader().list(shop)) seen.push(r.registrationId);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(RegistrationsUnavailableError);
    expect((error as Error).message).toBe(
      "The provider sent the same page twice; the list stops here.",
    );
    // The first page once, its repeats never shown again.
    expect(seen).toHaveLength(100);
    expect(new Set(seen).size).toBe(100);
  });
});

describe("since and filters", () => {
  it("stops at the first registration older than since (newest first)", async () => {
    const shop = await testShop();
    const before = listCalls(p.sandbox).length;
    const rows = await collect(reader().list(shop, { since: createdAt(96) }));
    expect(rows.map((x) => x.registrationId)).toEqual(
      Array.from({ length: 25 }, (_, k) => idOf(SEEDED - k)),
    );
    // One page of 100 held the oldest wanted and an older one: no second call.
    expect(listCalls(p.sandbox).length - before).toBe(1);
  });

  it("reads every page when the provider ignores orderBy (oldest first), and still finds them", async () => {
    const { shop, sandbox } = await shopOn({ registrationListing: { order: "asc" } });
    const rows = await collect(reader().list(shop, { since: createdAt(96) }));
    expect(rows.map((x) => x.registrationId).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 25 }, (_, k) => idOf(96 + k)),
    );
    expect(listCalls(sandbox)).toHaveLength(2);
  });

  it("passes the filters to the provider and checks them again on what comes back", async () => {
    const shop = await testShop();
    const wanted = (i: number) => i % 7 === 3 && i % 3 === 0;
    const expected = Array.from({ length: SEEDED }, (_, k) => SEEDED - k)
      .filter(wanted)
      .map(idOf);
    const rows = await collect(
      reader().list(shop, { customerEmail: "customer3@example.com", channelName: "retail" }),
    );
    expect(rows.map((x) => x.registrationId)).toEqual(expected);

    // A provider that ignores the filters: the same rows (the email in any case).
    const ignoring = await shopOn({ registrationListing: { ignoreFilters: true } });
    const again = await collect(
      reader().list(ignoring.shop, {
        customerEmail: "Customer3@Example.com",
        channelName: "retail",
      }),
    );
    expect(again.map((x) => x.registrationId)).toEqual(expected);
    const one = await collect(reader().list(ignoring.shop, { externalId: "REG-1001-42" }));
    expect(one.map((x) => x.externalId)).toEqual(["REG-1001-42"]);
  });

  it("reads --since as a UTC date or a date-time with an offset, and nothing else", () => {
    expect(parseInstantText("2026-01-31")).toBe(Date.UTC(2026, 0, 31));
    expect(parseInstantText("2026-01-31T09:30:00+02:00")).toBe(Date.UTC(2026, 0, 31, 7, 30));
    expect(parseInstantText("2026-01-31 09:30Z")).toBe(Date.UTC(2026, 0, 31, 9, 30));
    for (const bad of ["yesterday", "2026-02-30", "2026-01-31T09:30:00", "31/01/2026", ""]) {
      expect(parseInstantText(bad)).toBeNull();
    }
  });
});

describe("the store's rate limit", () => {
  it("takes a slot of the store's budget for every page", async () => {
    const { shop, sandbox } = await shopOn({}, 2001);
    const { limiter } = p.ctx;
    const used = (await limiter.inspect(2001)).used;
    await collect(reader().list(shop, { limit: 150 }));
    expect(listCalls(sandbox)).toHaveLength(2);
    expect((await limiter.inspect(2001)).used - used).toBe(2);
  });

  it("reads at bulk priority: with bulk work's share used up it says 'busy', live orders still go", async () => {
    const { shop, sandbox } = await shopOn({}, 2002);
    // A small budget, unpaced (LIMITER_PACE_BULK=false), so bulk work's share (19 of 20) fills
    // at once.
    const tight = new StoreRateLimiter(p.ctx.jobRedis, {
      limit: 20,
      windowMs: 60_000,
      paceBulk: false,
      liveSlowStart: true,
      prefix: `${p.ctx.prefix}:tight`,
    });
    const providers = new ProviderClients({
      limiter: tight,
      secrets: p.ctx.secrets,
      redis: p.ctx.jobRedis,
      prefix: p.ctx.prefix,
      timeoutMs: 5_000,
      production: p.ctx.providers.endpoints("production"),
      onResponse: () => {},
      logger: p.ctx.logger,
    });
    const tightReader = new RegistrationReader({ limiter: tight, providers }, { maxWaitMs: 500 });
    expect((await tightReader.page(shop, { size: 5 })).registrations).toHaveLength(5);
    for (let i = 1; i < tight.bulkCeiling; i++) {
      expect((await tight.acquire(2002, "bulk")).granted).toBe(true);
    }
    const calls = listCalls(sandbox).length;
    const error = await tightReader.page(shop, { size: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistrationsUnavailableError);
    expect((error as RegistrationsUnavailableError).reason).toBe("busy");
    expect((error as Error).message).toMatch(
      /^The provider's request budget for your store is in use by order sync just now: try again in \d+ s\.$/,
    );
    // Nothing was sent, and a live order still finds its reserved slot.
    expect(listCalls(sandbox)).toHaveLength(calls);
    expect((await tight.acquire(2002, "live")).granted).toBe(true);
  });

  it("after a 429 blocks the store until Retry-After and asks for the page again", async () => {
    const { shop, sandbox } = await shopOn({ rateLimit: 3, windowMs: 1_000 }, 3001);
    // Another client used the store's whole budget.
    sandbox.consume(3001, 3);
    const page = await reader().page(shop, { size: 5 });
    expect(page.registrations).toHaveLength(5);
    const statuses = listCalls(sandbox).map((a) => a.status);
    expect(statuses[0]).toBe(429);
    expect(statuses.at(-1)).toBe(200);
    expect(sandbox.state.counters.rateLimited).toBeGreaterThanOrEqual(1);
  });
});

describe("errors in words", () => {
  it("a missing scope, a store the credentials do not cover, a provider failing: each its own line", async () => {
    const unscoped = await shopOn({ scopes: ["read:orders", "write:orders", "read:stores"] });
    const scope = await reader()
      .page(unscoped.shop, { size: 10 })
      .catch((e: unknown) => e);
    expect((scope as Error).message).toBe(
      "The provider did not let these credentials read registrations (scope read:registrations): ask the provider to grant it.",
    );

    const { shop, sandbox } = await shopOn({});
    const otherStore = await reader()
      .page({ ...shop, storeId: 4242 }, { size: 10 })
      .catch((e: unknown) => e);
    expect((otherStore as Error).message).toBe(
      "The provider does not know this shop's store for these credentials: choose the store again under Settings → Provider connection.",
    );

    sandbox.setFaults({ errorRate: 1 });
    const failing = await reader()
      .page(shop, { size: 10 })
      .catch((e: unknown) => e);
    expect((failing as RegistrationsUnavailableError).reason).toBe("provider");
    expect((failing as Error).message).toMatch(
      /^The provider answered with an error \(500, request [0-9a-f-]{36}\): try again in a few minutes\.$/,
    );
  });

  it("names a shop without a provider connection or store", async () => {
    const shop = await testShop();
    const noCredentials = { ...shop, providerClientId: null };
    expect(RegistrationReader.problem(noCredentials)).toMatch(
      /^The provider connection is not set up yet/,
    );
    expect(RegistrationReader.problem({ ...shop, storeId: null })).toBe(
      "No provider store is chosen yet: choose your store under Settings → Provider connection.",
    );
    expect(RegistrationReader.problem(shop)).toBeNull();
    const error = await reader()
      .page(noCredentials, { size: 10 })
      .catch((e: unknown) => e);
    expect((error as RegistrationsUnavailableError).reason).toBe("not-configured");
  });

  it("wrong credentials, a refused cursor and an unreachable provider: one line each, no email logged", async () => {
    const { shop } = await shopOn({});
    const wrong = {
      ...shop,
      updatedAt: "changed",
      providerClientSecretSealed: p.ctx.secrets.seal(
        "not-the-secret",
        sealedFor.providerClientSecret(shop.shop),
      ),
    };
    const credentials = await reader()
      .page(wrong, { size: 10, customerEmail: "customer3@example.com" })
      .catch((e: unknown) => e);
    expect((credentials as Error).message).toBe(
      "The provider did not accept this shop's client ID and secret: verify them again under Settings → Provider connection.",
    );

    const cursor = await reader()
      .page(shop, { size: 10, after: "not-a-cursor" })
      .catch((e: unknown) => e);
    expect((cursor as RegistrationsUnavailableError).reason).toBe("cursor");
    expect((cursor as Error).message).toBe(
      "The provider no longer accepts this page's link: start again from the first page.",
    );

    const gone = await shopOn({});
    await reader().page(gone.shop, { size: 1 });
    await gone.sandbox.close();
    const unreachable = await reader()
      .page(gone.shop, { size: 10, customerEmail: "customer3@example.com" })
      .catch((e: unknown) => e);
    expect((unreachable as Error).message).toBe(
      "The provider could not be reached: try again in a few minutes.",
    );

    const lines = logs.read();
    expect(lines).toContain("registrations: the provider did not answer with a page");
    expect(lines).toContain('"reason":"unreachable"');
    expect(lines).not.toMatch(/customer3@example\.com/);
  });
});
