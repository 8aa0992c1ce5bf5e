import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducts, type ProductsKit } from "../../../src/features/products/compose.ts";
import { ImportInterruptedError } from "../../../src/features/products/index.ts";
import { readCatalogIndex } from "../../../src/shopify/catalog-index.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";

let p: Pipeline;
let kit: ProductsKit;

beforeAll(async () => {
  // The connector's limiter thinks it may send 1,000 a second; the sandbox allows 5: 429s.
  p = await startPipeline({
    sandbox: { rateLimit: 5, windowMs: 1_000 },
    env: { PROVIDER_RATE_LIMIT: "1000", PROVIDER_RATE_WINDOW_MS: "1000" },
  });
  kit = createProducts(p.ctx, p.ctx.providers);
});
afterAll(() => p.close());

const csv = (prefix: string, n: number) =>
  [
    "handle,title,sku,price",
    ...Array.from(
      { length: n },
      (_, i) => `${prefix}-${i},T ${i},${prefix.toUpperCase()}-${i},${i}.99`,
    ),
  ].join("\n");

async function importText(name: string, text: string) {
  const shop = await p.ctx.shops.getShop(TEST_SHOP);
  if (!shop) throw new Error("no test shop");
  const target = kit.targetFor(shop);
  const prepared = await kit.importer.prepare(
    target,
    { name, text, format: "csv" },
    { source: "cli" },
  );
  if (prepared.importId === null) throw new Error("nothing to run");
  return kit.importer.run(target, prepared.importId);
}
const atProvider = (prefix: string) =>
  p.sandbox.state.products.all.filter((x) => x.createdViaApi && x.handle.startsWith(`${prefix}-`));

describe("the product importer against a provider that fails", () => {
  it("waits out 429s, retries 500s and lost answers, and creates each product once", async () => {
    p.sandbox.setFaults({ extra429Rate: 0.15, errorRate: 0.15, dropAfterCommitRate: 0.2, seed: 7 });
    const summary = await importText("faults.csv", csv("fault", 20));
    p.sandbox.setFaults({});
    const { faultsByKind } = p.sandbox.state.counters;
    expect(p.sandbox.state.counters.rateLimited + faultsByKind.extra429).toBeGreaterThan(0);
    expect(faultsByKind.error).toBeGreaterThan(0);
    expect(faultsByKind.drop).toBeGreaterThan(0);
    // A create whose answer was lost, sent again, answers 200: still this import's creation.
    expect(summary).toMatchObject({ status: "completed", created: 20, updated: 0, failed: 0 });
    expect(atProvider("fault")).toHaveLength(20);
    // Never above the sandbox's budget as it counted arrivals (its 429s refused the rest).
    expect(p.sandbox.state.maxInAnyWindow(1001, 1_000)).toBeLessThanOrEqual(5);
  }, 120_000);

  it("stops with one line after the provider keeps failing, and the next run resumes", async () => {
    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    if (!shop) throw new Error("no test shop");
    const target = kit.targetFor(shop);
    const prepared = await kit.importer.prepare(
      target,
      { name: "down.csv", text: csv("down", 3), format: "csv" },
      { source: "cli" },
    );
    p.sandbox.setFaults({ errorRate: 1 });
    const stopped = await kit.importer.run(target, prepared.importId ?? 0).catch((e: unknown) => e);
    p.sandbox.setFaults({});
    expect(stopped).toBeInstanceOf(ImportInterruptedError);
    expect((stopped as Error).message).toBe(
      "the provider answered 500 to POST /products (ProviderServerError): run the same import again to resume",
    );
    expect((await kit.imports.get(prepared.importId ?? 0))?.status).toBe("interrupted");
    const again = await kit.importer.prepare(
      target,
      { name: "down.csv", text: csv("down", 3), format: "csv" },
      { source: "cli" },
    );
    expect(again.importId).toBe(prepared.importId);
    const resumed = await kit.importer.run(target, again.importId ?? 0);
    expect(resumed).toMatchObject({ status: "completed", resumed: true, failed: 0 });
    expect(resumed.created + resumed.skipped).toBe(3);
    expect(atProvider("down")).toHaveLength(3);
  }, 120_000);
});

describe("the Shopify catalog check", () => {
  it("pages through every product and every variant of a large catalog", async () => {
    const catalog = p.shopify.state.shop(TEST_SHOP)?.catalog;
    if (!catalog) throw new Error("no stand-in shop");
    for (let i = 0; i < 60; i++) {
      catalog.products.push({
        id: 9_000 + i,
        title: `Bulk product ${i}`,
        status: "ACTIVE",
        variants: [{ id: 90_000 + i, title: "Default Title", sku: `BULK-${i}`, price: "1.00" }],
      });
    }
    // More variants than one page of the products query holds (30): read with a second query.
    catalog.products.push({
      id: 9_999,
      title: "Many sizes",
      handle: "many-sizes",
      status: "ACTIVE",
      variants: Array.from({ length: 75 }, (_, i) => ({
        id: 99_000 + i,
        title: `Size ${i}`,
        sku: `SIZE-${i}`,
        price: "2.00",
      })),
    });
    const shop = await p.ctx.shops.getShop(TEST_SHOP);
    if (!shop) throw new Error("no test shop");
    const pages: number[] = [];
    const index = await readCatalogIndex(p.ctx.shopifyAdmin.for(shop), {
      onPage: (n) => pages.push(n),
    });
    expect(index.products).toBe(catalog.products.length);
    expect(pages.length).toBe(Math.ceil(catalog.products.length / 25));
    // Handles: given, or derived from the title as Shopify does.
    expect(index.handles.get("bulk-product-59")).toBe("gid://shopify/Product/9059");
    expect(index.handles.get("many-sizes")).toBe("gid://shopify/Product/9999");
    expect(index.skus.get("size-74")).toEqual({
      productId: "gid://shopify/Product/9999",
      handle: "many-sizes",
    });
    expect(index.skus.get("bulk-0")?.handle).toBe("bulk-product-0");
  }, 60_000);
});
