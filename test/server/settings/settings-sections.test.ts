import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CookieJar } from "../../helpers/install-harness.ts";
import { type InstallHarness, startInstallHarness } from "../../helpers/install-harness.ts";

const SHOP = "sections-shop.myshopify.com";

let h: InstallHarness;
let jar: CookieJar;
beforeEach(async () => {
  h = await startInstallHarness();
  ({ jar } = await h.install(SHOP));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await h.close();
});

/**
 * What each section's loader reads, watched on the real repositories (the calls go through)
 * and on the stand-in Shopify's GraphQL count (the shop's catalog).
 */
function watchReads() {
  const spies = {
    status: vi.spyOn(h.ctx.links, "countByResult"),
    testOrders: vi.spyOn(h.ctx.shops, "countKeptOut"),
    claims: vi.spyOn(h.ctx.claims, "listForShop"),
  };
  const graphqlBefore = h.standIn.state.counters.graphqlRequests;
  return {
    counts: () => ({
      status: spies.status.mock.calls.length,
      // The status section counts the sales kept out without an address with the same call.
      testOrders: spies.testOrders.mock.calls.filter(([, reason]) => reason === "test").length,
      claims: spies.claims.mock.calls.length,
      shopifyCatalog: h.standIn.state.counters.graphqlRequests - graphqlBefore,
    }),
  };
}

describe("settings page sections", () => {
  it("loads every section for the page, the shop's catalog once", async () => {
    const reads = watchReads();
    const res = await h.get("/settings", jar);
    expect(res.status).toBe(200);
    const page = await res.text();
    for (const heading of ["Provider connection", "Locations", "Past orders", "Sync status"]) {
      expect(page).toContain(heading);
    }
    expect(page).not.toContain("data-partial");
    expect(reads.counts()).toEqual({ status: 1, testOrders: 1, claims: 1, shopifyCatalog: 1 });
  });

  it.each<{
    section: string;
    path: string;
    form: Record<string, string>;
    message: string;
    heading: string;
    shopifyCatalog: number;
  }>([
    {
      section: "provider",
      path: "/settings/provider",
      form: { clientId: "" },
      message: "Enter the client ID.",
      heading: "Provider connection",
      shopifyCatalog: 0,
    },
    {
      section: "backfill",
      path: "/settings/backfill",
      form: { since: "31/01/2026" },
      message: "Enter the start date as a date, for example 2026-01-31.",
      heading: "Past orders",
      shopifyCatalog: 0,
    },
    {
      section: "locations",
      path: "/settings/locations",
      form: { "location.4001": "abc" },
      message: "The fulfillment location ID marked below must be a whole number above 0",
      heading: "Locations",
      // The locations section lists the shop's Shopify locations: its own loader reads them.
      shopifyCatalog: 1,
    },
  ])("a refused $section form shows and loads its own section only", async (refusal) => {
    const reads = watchReads();
    const res = await h.postForm(refusal.path, refusal.form, jar);
    expect(res.status).toBe(400);
    // None of the other sections' reads ran.
    expect(reads.counts()).toEqual({
      status: 0,
      testOrders: 0,
      claims: 0,
      shopifyCatalog: refusal.shopifyCatalog,
    });
    const page = await res.text();
    // The page's shell and the refused section, with its message.
    expect(page).toContain(`Settings for ${SHOP}`);
    expect(page).toContain("Sync is paused until the provider settings below are complete");
    expect(page).toContain(`>${refusal.heading}</h2>`);
    expect(page).toContain(refusal.message);
    expect(page).toContain("Show all settings");
    // No other section is shown.
    const others = ["Provider connection", "Locations", "Past orders", "Sync status", "Claims"];
    for (const heading of others.filter((x) => x !== refusal.heading)) {
      expect(page).not.toContain(`>${heading}</h2>`);
    }
  });
});
