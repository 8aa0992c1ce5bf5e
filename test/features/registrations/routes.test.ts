import { mintSessionToken } from "@connector/shopify-standin";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealedFor } from "../../../src/lib/secret-box.ts";
import { captureLogs } from "../../helpers/captured-logs.ts";
import {
  APP_KEY,
  APP_SECRET,
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const SHOP = "registrations-shop.myshopify.com";
const BARE = "bare-shop.myshopify.com";
const HOST = Buffer.from("admin.shopify.com/store/registrations-shop")
  .toString("base64")
  .replace(/=+$/, "");
const SEEDED = 120;
/** Seeded registration i (1…120) of store 1001. */
const idOf = (i: number) => `REG-1001-${i}`;

let h: InstallHarness;
let jar: CookieJar;
let bareJar: CookieJar;
const logs = captureLogs("registrations-page");

beforeAll(async () => {
  h = await startInstallHarness({
    provider: { stores: [1001], seedRegistrations: SEEDED },
    logDestination: logs.destination,
    env: { LOG_LEVEL: "info" },
  });
  ({ jar } = await h.install(SHOP));
  ({ jar: bareJar } = await h.install(BARE));
  await connect(SHOP, h.provider.clientSecret);
});
afterAll(async () => {
  await h.close();
  logs.remove();
});

/** The shop's provider settings, as the settings page saves them once verified. */
async function connect(shop: string, secret: string) {
  await h.ctx.shops.updateSettings(shop, {
    providerClientId: h.provider.clientId,
    providerClientSecretSealed: h.ctx.secrets.seal(secret, sealedFor.providerClientSecret(shop)),
    storeId: 1001,
    storeCurrency: "USD",
  });
}

const decode = (s: string) => s.replaceAll("&amp;", "&").replaceAll("&quot;", '"');
/** The first cell of each body row: the external IDs shown, in order. */
const shownIds = (page: string) =>
  [...page.matchAll(/<tr><td>([^<]*)<\/td>/g)].map((m) => decode(m[1] ?? ""));
const linkOf = (page: string, rel: "next" | "prev") => {
  const m = new RegExp(`<a class="button" rel="${rel}" href="([^"]+)"`).exec(page);
  return m?.[1] ? decode(m[1]) : null;
};
const csvLinkOf = (page: string) => {
  const m = /href="(\/settings\/registrations\.csv[^"]*)"/.exec(page);
  return m?.[1] ? decode(m[1]) : null;
};
const registrationCalls = () =>
  h.provider.state.arrivals.filter((a) => a.path === "/v1/registrations").length;

describe("the settings tabs", () => {
  it("shows Settings | Registrations above the settings page, the current one marked", async () => {
    const page = await (await h.get("/settings", jar)).text();
    expect(page).toContain(
      '<nav class="tabs" aria-label="Settings pages"><a href="/settings" aria-current="page">Settings</a><a href="/settings/registrations">Registrations</a></nav>',
    );
    const tab = await (await h.get("/settings/registrations", jar)).text();
    expect(tab).toContain(
      '<a href="/settings">Settings</a><a href="/settings/registrations" aria-current="page">Registrations</a>',
    );
  });
});

describe("the Registrations tab", () => {
  it("pages through the provider's cursors: Next, then Previous back to the first page", async () => {
    const first = await h.get("/settings/registrations", jar);
    expect(first.status).toBe(200);
    expect(first.headers.get("cache-control")).toBe("no-store");
    const page1 = await first.text();
    expect(page1).toContain(
      '<th scope="col">External ID</th><th scope="col">Customer</th><th scope="col">Email</th><th scope="col">Channel</th><th scope="col">Items</th><th scope="col">Created</th>',
    );
    expect(shownIds(page1)).toEqual(Array.from({ length: 25 }, (_, k) => idOf(SEEDED - k)));
    expect(page1).toContain(
      "<tr><td>REG-1001-120</td><td>Customer 1</td><td>customer1@example.com</td><td>retail</td><td>1 × Product 0 (SKU-0)</td><td>2026-01-06 00:00 UTC</td></tr>",
    );
    expect(linkOf(page1, "prev")).toBeNull();
    const next = linkOf(page1, "next");
    expect(next).toMatch(/^\/settings\/registrations\?size=25&after=[\w-]+$/);

    const page2 = await (await h.get(next ?? "", jar)).text();
    expect(shownIds(page2)).toEqual(Array.from({ length: 25 }, (_, k) => idOf(SEEDED - 25 - k)));
    const previous = linkOf(page2, "prev");
    expect(previous).toMatch(/^\/settings\/registrations\?size=25&before=[\w-]+$/);
    const back = await (await h.get(previous ?? "", jar)).text();
    expect(shownIds(back)).toEqual(shownIds(page1));
    expect(linkOf(back, "prev")).toBeNull();
    expect(linkOf(back, "next")).not.toBeNull();
  });

  it("lets the merchant choose up to 100 rows a page, and names a bad page size", async () => {
    const big = await (await h.get("/settings/registrations?size=100", jar)).text();
    expect(shownIds(big)).toHaveLength(100);
    expect(big).toContain('<option value="100" selected="">100</option>');
    const last = await (await h.get(linkOf(big, "next") ?? "", jar)).text();
    expect(shownIds(last)).toHaveLength(20);
    expect(linkOf(last, "next")).toBeNull();

    const calls = registrationCalls();
    for (const size of ["500", "0", "ten"]) {
      const res = await h.get(`/settings/registrations?size=${size}`, jar);
      expect(res.status).toBe(400);
      expect(await res.text()).toContain(
        '<p class="notice error" role="alert">Rows per page must be a whole number from 1 to 100.</p>',
      );
    }
    expect(registrationCalls()).toBe(calls);
  });

  it("filters by email, channel or external ID, and every link keeps the filters", async () => {
    const page = await (
      await h.get(
        "/settings/registrations?email=customer3%40example.com&channel=retail&size=10",
        jar,
      )
    ).text();
    expect(shownIds(page)).toEqual([
      "REG-1001-108",
      "REG-1001-87",
      "REG-1001-66",
      "REG-1001-45",
      "REG-1001-24",
      "REG-1001-3",
    ]);
    expect(page).toContain('value="customer3@example.com"');
    expect(csvLinkOf(page)).toBe(
      "/settings/registrations.csv?email=customer3%40example.com&channel=retail",
    );
    expect(page).toContain("Download these registrations (CSV)");
    const none = await (await h.get("/settings/registrations?externalId=REG-9", jar)).text();
    expect(none).toContain("No registrations match these filters.");
  });

  it("downloads every page as CSV, or the filtered set, as an attachment", async () => {
    const res = await h.get("/settings/registrations.csv", jar);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe(
      `attachment; filename="registrations-registrations-shop-${new Date().toISOString().slice(0, 10)}.csv"`,
    );
    expect(res.headers.get("cache-control")).toBe("no-store");
    const rows = parse(await res.text(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows).toHaveLength(SEEDED);
    expect(rows.map((r) => r["External ID"])).toEqual(
      Array.from({ length: SEEDED }, (_, k) => idOf(SEEDED - k)),
    );
    expect(rows[0]).toMatchObject({
      "Registration ID": "100100120",
      Email: "customer1@example.com",
      Items: "1 × Product 0 (SKU-0)",
      Created: "2026-01-06T00:00:00.000Z",
      Claims: "Warranty CLM-120",
    });

    const filtered = await h.get("/settings/registrations.csv?channel=retail", jar);
    const retail = parse(await filtered.text(), { columns: true, bom: true }) as Record<
      string,
      string
    >[];
    expect(retail).toHaveLength(40);
    expect(new Set(retail.map((r) => r.Channel))).toEqual(new Set(["retail"]));
  });

  it("a shop without provider settings is told what to set first; nothing is asked of the provider", async () => {
    const calls = registrationCalls();
    const res = await h.get("/settings/registrations", bareJar);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain(
      "The provider connection is not set up yet: enter your client ID and secret under Settings → Provider connection, then choose your store.",
    );
    expect(page).toContain(
      '<a href="/settings#provider-title">Go to Settings → Provider connection</a>',
    );
    expect(page).not.toContain("<table>");
    const csv = await h.get("/settings/registrations.csv", bareJar);
    expect(csv.headers.get("content-type")).toMatch(/^text\/html/);
    expect(registrationCalls()).toBe(calls);
  });

  it("a provider error is one line on the page, never a stack, and no email reaches the log", async () => {
    const bad = await h.get("/settings/registrations?after=not-a-cursor", jar);
    expect(bad.status).toBe(400);
    const badPage = await bad.text();
    expect(badPage).toContain(
      '<p class="notice error" role="alert">The provider no longer accepts this page&#39;s link: start again from the first page.</p>',
    );
    expect(badPage).toContain('<a href="/settings/registrations?size=25">First page</a>');

    await connect(SHOP, "not-the-secret");
    // A client of its own, so no token cached for the right secret vouches for the wrong one.
    h.provider.addClient("wrong-client", "right-secret", [1001]);
    await h.ctx.shops.updateSettings(SHOP, { providerClientId: "wrong-client" });
    try {
      const res = await h.get("/settings/registrations?email=customer3%40example.com", jar);
      expect(res.status).toBe(502);
      const page = await res.text();
      expect(page).toContain(
        '<p class="notice error" role="alert">The provider did not accept this shop&#39;s client ID and secret: verify them again under Settings → Provider connection.</p>',
      );
      expect(page).not.toMatch(/\bat .*\.ts:\d+/);
      const csv = await h.get("/settings/registrations.csv?email=customer3%40example.com", jar);
      expect(csv.status).toBe(502);
      expect(csv.headers.get("content-disposition")).toBeNull();
    } finally {
      await connect(SHOP, h.provider.clientSecret);
    }
    const lines = logs.read();
    expect(lines).toContain("registrations: the provider did not answer with a page");
    expect(lines).not.toContain("customer3@example.com");
  });

  it("needs the shop's session: none gets 401, and the shop is never taken from the request", async () => {
    expect((await h.get("/settings/registrations")).status).toBe(401);
    expect((await h.get("/settings/registrations.csv")).status).toBe(401);
    const other = await (await h.get(`/settings/registrations?shop=${BARE}`, jar)).text();
    expect(other).toContain(`Settings for ${SHOP}`);
  });
});

describe("the Registrations tab inside the Shopify admin", () => {
  it("authenticates with Shopify's session token, and every link keeps embedded, shop and host", async () => {
    const token = await mintSessionToken(SHOP, { apiKey: APP_KEY, apiSecret: APP_SECRET });
    const query = new URLSearchParams({ embedded: "1", shop: SHOP, host: HOST, id_token: token });
    const res = await h.get(`/settings/registrations?${query}`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(shownIds(page)).toHaveLength(25);
    const keep = `embedded=1&shop=${SHOP}&host=${HOST}`;
    expect(linkOf(page, "next")).toMatch(
      new RegExp(`^/settings/registrations\\?size=25&after=[\\w-]+&${keep}$`),
    );
    expect(csvLinkOf(page)).toBe(`/settings/registrations.csv?${keep}`);
    expect(page).toContain(`<a href="/settings?${keep.replaceAll("&", "&amp;")}">Settings</a>`);
    // The filter form keeps them as fields; no link carries the (short-lived) token.
    expect(page).toContain('<input type="hidden" name="host" value="');
    expect(page).not.toContain(token);
    // The page signs links on click, as it signs forms.
    expect(page).toContain("closest('a[href^=\"/settings\"]')");

    // The CSV with the token the link script adds.
    const csv = await h.get(`/settings/registrations.csv?${query}`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename="/);
    // Without a token: the bounce page fetches one (the frame's reload).
    const bounce = await h.get(`/settings/registrations?embedded=1&shop=${SHOP}&host=${HOST}`);
    expect(await bounce.text()).toContain("shopify.idToken().then");
  });
});

describe("a CSV download the provider breaks off", () => {
  it("fails the download instead of ending it as if complete", async () => {
    // A provider whose cursor does not move: the second page cannot be read.
    const cutLogs = captureLogs("csv-cut");
    const broken = await startInstallHarness({
      provider: {
        stores: [1001],
        seedRegistrations: SEEDED,
        registrationListing: { stuckCursor: true },
      },
      logDestination: cutLogs.destination,
      env: { LOG_LEVEL: "info" },
    });
    try {
      const { jar: brokenJar } = await broken.install(SHOP);
      await broken.ctx.shops.updateSettings(SHOP, {
        providerClientId: broken.provider.clientId,
        providerClientSecretSealed: broken.ctx.secrets.seal(
          broken.provider.clientSecret,
          sealedFor.providerClientSecret(SHOP),
        ),
        storeId: 1001,
      });
      const res = await broken.get("/settings/registrations.csv", brokenJar);
      // The first page was read before answering: the download starts...
      expect(res.status).toBe(200);
      // ...and is cut off at the second, so the browser reports it failed.
      await expect(res.text()).rejects.toThrow();
      expect(cutLogs.read()).toContain(
        "registrations CSV cut short: the provider failed during the download",
      );
    } finally {
      await broken.close();
      cutLogs.remove();
    }
  });
});
