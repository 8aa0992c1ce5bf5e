import { basename } from "node:path";
import type { Command } from "commander";
import { withProducts } from "../../app/cli.ts";
import type { Core } from "../../app/connector.ts";
import { requireShop, shopDomain } from "../../cli/arguments.ts";
import { refuse } from "../../cli/errors.ts";
import { readInputFile } from "../../cli/input-file.ts";
import { progress } from "../../cli/progress.ts";
import { formatTable, printable } from "../../cli/table.ts";
import type { RuntimeConfig } from "../../config/runtime-config.ts";
import { type Product, type ProviderClient, ProviderNotFoundError } from "../../provider/index.ts";
import type { ShopRecord } from "../../store/index.ts";
import type { ProductsKit } from "./compose.ts";
import {
  type CatalogProduct,
  callAtBulkPriority,
  type FileProblem,
  formatOf,
  ImportBusyError,
  ImportInterruptedError,
  type ImportSummary,
} from "./index.ts";

type Ctx = Core & { products: ProductsKit };

/** A failure the command explains in one line (exit code 1), after what it printed. */
class ProductsCommandError extends Error {
  override name = "ProductsCommandError";
}

/** `connector products …`: products that live outside Shopify, at the provider. */
export function registerProductsCommand(program: Command, config: RuntimeConfig) {
  const products = program
    .command("products")
    .description("products outside Shopify (retired, legacy, other channels) at the provider");

  const run = (action: () => Promise<void>) => async () => {
    try {
      await action();
    } catch (error) {
      if (!(error instanceof ProductsCommandError || error instanceof ImportBusyError)) {
        throw error;
      }
      refuse(printable(error.message), 1);
    }
  };

  products
    .command("import")
    .description(
      "validate a .csv or .json file, check it against the shop's Shopify catalog and upsert its products at the provider (resumable)",
    )
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .requiredOption("--file <path>", "a .csv (docs/products-csv.md) or .json file")
    .option("--dry-run", "validate and check Shopify; send nothing")
    .option("--skip-invalid", "import the good products and leave out invalid and refused ones")
    .option("--force", "send products even when their body is the same as last sent")
    .option("--json", "print one JSON summary on stdout")
    .action(
      (opts: {
        shop: string;
        file: string;
        dryRun?: boolean;
        skipInvalid?: boolean;
        force?: boolean;
        json?: boolean;
      }) =>
        run(async () => {
          const format = formatOf(opts.file);
          if (!format) {
            throw new ProductsCommandError(
              `--file must be a .csv or a .json file (got ${basename(opts.file)})`,
            );
          }
          const text = readInputFile(opts.file);
          await withProducts(config, async (ctx) => {
            const shop = await requireShop(ctx, opts.shop);
            const target = ctx.products.targetFor(shop);
            const prepared = await ctx.products.importer.prepare(
              target,
              { name: basename(opts.file), text, format },
              {
                source: "cli",
                dryRun: opts.dryRun ?? false,
                skipInvalid: opts.skipInvalid ?? false,
                force: opts.force ?? false,
              },
            );
            let summary = prepared.summary;
            if (prepared.importId !== null) {
              if (!opts.json && summary.resumed) {
                console.error(`resuming import ${prepared.importId} of ${basename(opts.file)}`);
              }
              summary = await runWithProgress(ctx, target, prepared.importId, !opts.json).catch(
                (error: unknown) => {
                  if (!(error instanceof ImportInterruptedError)) throw error;
                  return error.summary;
                },
              );
            }
            report(summary, opts);
          });
        })(),
    );

  products
    .command("list")
    .description("the products the connector created at the provider for the shop")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .option("--refresh", "read each product again from the provider (GET, at bulk priority)")
    .option("--json", "print JSON")
    .action((opts: { shop: string; refresh?: boolean; json?: boolean }) =>
      run(async () => {
        await withProducts(config, async (ctx) => {
          const shop = await requireShop(ctx, opts.shop);
          const { space, client } = ctx.products.spaceOf(shop);
          let entries = await ctx.products.imports.listCatalog(space);
          if (opts.refresh) {
            for (const entry of entries) {
              await refreshEntry(ctx, shop, entry, entry.productId, client);
            }
            entries = await ctx.products.imports.listCatalog(space);
          }
          if (opts.json) {
            console.log(JSON.stringify(entries.map(listView), null, 2));
          } else if (entries.length === 0) {
            console.log(
              `no products imported for ${opts.shop} in store ${space.storeId}: import some with \`connector products import\``,
            );
          } else {
            console.log(
              formatTable(
                entries.map((e) => listView(e)).map(({ importedAt: _at, ...row }) => row),
              ),
            );
          }
        });
      })(),
    );

  products
    .command("show")
    .description("read one product from the provider (GET), by handle or productId")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .argument("<handle-or-id>", "the product's handle, or the provider's productId")
    .option("--json", "print JSON")
    .action((ref: string, opts: { shop: string; json?: boolean }) =>
      run(async () => {
        await withProducts(config, async (ctx) => {
          const shop = await requireShop(ctx, opts.shop);
          const { client } = ctx.products.spaceOf(shop);
          const { productId, entry } = await resolveProduct(ctx, shop, ref);
          const product = await refreshEntry(ctx, shop, entry, productId, client);
          if (opts.json) console.log(JSON.stringify(product, null, 2));
          else console.log(showText(product));
        });
      })(),
    );

  products
    .command("delete")
    .description("delete one product at the provider (DELETE; deleting twice is fine)")
    .requiredOption("--shop <domain>", "the shop", shopDomain)
    .argument("<handle-or-id>", "the product's handle, or the provider's productId")
    .action((ref: string, opts: { shop: string }) =>
      run(async () => {
        await withProducts(config, async (ctx) => {
          const shop = await requireShop(ctx, opts.shop);
          const { space, client } = ctx.products.spaceOf(shop);
          const { productId, entry } = await resolveProduct(ctx, shop, ref);
          try {
            await callAtBulkPriority(ctx.limiter, space.storeId, () =>
              client.deleteProduct(productId, space.storeId),
            );
          } catch (error) {
            if (!(error instanceof ProviderNotFoundError)) throw error;
            throw new ProductsCommandError(notFoundText(productId, shop.shop));
          }
          const deletedOn = new Date().toISOString();
          if (entry)
            await ctx.products.imports.markDeleted(
              space,
              entry.handle,
              entry.deletedOn ?? deletedOn,
            );
          console.log(
            `deleted product ${productId}${entry ? ` (${entry.handle})` : ""} at the provider, store ${space.storeId}; it stays readable with deletedOn set, and importing its handle again brings it back with the same productId`,
          );
        });
      })(),
    );
}

/** Runs the import, its progress on stderr (see ../../cli/progress.ts); Ctrl-C stops it cleanly. */
async function runWithProgress(
  ctx: Ctx,
  target: ReturnType<ProductsKit["targetFor"]>,
  importId: number,
  human: boolean,
): Promise<ImportSummary> {
  // A bar in a terminal; a log or CI gets a line every 100 products and one at the end.
  type ImportCounts = { created: number; updated: number; failed: number };
  const bar = human
    ? progress<ImportCounts>({
        bar: "{bar} {value}/{total} products | {created} created, {updated} updated, {failed} failed | ETA {eta_formatted}",
        line: (done, total, c) =>
          `products import: ${done}/${total} products (${c.created} created, ${c.updated} updated, ${c.failed} failed)`,
        every: 100,
        etaBuffer: 20,
      })
    : null;
  const stop = new AbortController();
  const onInterrupt = () => stop.abort();
  process.once("SIGINT", onInterrupt);
  try {
    return await ctx.products.importer.run(target, importId, {
      signal: stop.signal,
      onProgress: (done, total, s) =>
        bar?.update(done, total, { created: s.created, updated: s.updated, failed: s.failed }),
    });
  } finally {
    bar?.stop();
    process.off("SIGINT", onInterrupt);
  }
}

function problemLine(p: FileProblem): string {
  const where = p.line === null ? "file" : `line ${p.line}`;
  return `${where}${p.field ? ` ${p.field}` : ""}: ${printable(p.message)}`;
}

/** The summary: one JSON document, or the problems then one line of counts. */
function report(summary: ImportSummary, opts: { json?: boolean; skipInvalid?: boolean }) {
  const bad = summary.invalid + summary.refused + summary.failed + summary.fileProblems.length;
  if (bad > 0 || summary.status === "interrupted") process.exitCode = 1;
  if (opts.json) {
    console.log(JSON.stringify(summary, null, 2));
    return;
  }
  for (const p of summary.fileProblems) console.error(problemLine(p));
  for (const row of summary.rows) {
    if (row.outcome === "invalid" || row.outcome === "refused" || row.outcome === "failed") {
      for (const p of row.problems) console.error(problemLine(p));
    }
  }
  const counts = `${summary.total} products: ${summary.created} created, ${summary.updated} updated, ${summary.unchanged} unchanged, ${summary.skipped} skipped (done before), ${summary.invalid} invalid, ${summary.refused} refused, ${summary.failed} failed`;
  if (summary.fileProblems.length > 0 && summary.total === 0) {
    // An empty file, or one that is not a product file: "0 of 0 products ready" would read as
    // a success.
    console.log(
      `nothing ${summary.status === "dry-run" ? "checked" : "imported"}: the file cannot be read as products (see above)`,
    );
  } else if (summary.status === "dry-run") {
    console.log(
      `dry run, nothing sent: ${summary.total - summary.invalid - summary.refused} of ${summary.total} products ready, ${summary.invalid} invalid, ${summary.refused} refused`,
    );
  } else if (summary.status === "rejected") {
    console.log(
      summary.fileProblems.length > 0
        ? "nothing imported: the file cannot be read as products (see above)"
        : `nothing imported: ${summary.invalid} invalid and ${summary.refused} refused of ${summary.total} products; fix them, or pass --skip-invalid to import the rest`,
    );
  } else if (summary.status === "interrupted") {
    console.log(`import ${summary.importId} stopped: ${counts}`);
    refuse(printable(summary.error ?? "interrupted"), 1);
  } else console.log(`import ${summary.importId}: ${counts}`);
}

function listView(entry: CatalogProduct) {
  return {
    handle: entry.handle,
    productId: entry.productId,
    title: entry.title,
    variants: entry.variants,
    status: entry.deletedOn ? "deleted" : entry.status,
    lastImport: entry.lastImportId,
    importedAt: entry.importedAt,
  };
}

/** A handle (from the connector's record) or a productId (digits). */
async function resolveProduct(
  ctx: Ctx,
  shop: ShopRecord,
  ref: string,
): Promise<{ productId: number; entry: CatalogProduct | null }> {
  const { space } = ctx.products.spaceOf(shop);
  const byHandle = await ctx.products.imports.catalogEntry(space, ref);
  if (byHandle) return { productId: byHandle.productId, entry: byHandle };
  if (/^\d+$/.test(ref)) {
    const productId = Number(ref);
    return { productId, entry: await ctx.products.imports.catalogByProductId(space, productId) };
  }
  throw new ProductsCommandError(
    `no product with handle "${ref}" was imported for ${shop.shop} in store ${space.storeId}: see \`connector products list --shop ${shop.shop}\`, or give its productId`,
  );
}

/** GETs the product (at bulk priority) and brings the connector's record up to date. */
async function refreshEntry(
  ctx: Ctx,
  shop: ShopRecord,
  entry: CatalogProduct | null,
  productId: number,
  client: ProviderClient,
): Promise<Product> {
  const { space } = ctx.products.spaceOf(shop);
  let product: Product;
  try {
    product = await callAtBulkPriority(ctx.limiter, space.storeId, () =>
      client.getProduct(productId, space.storeId),
    );
  } catch (error) {
    if (!(error instanceof ProviderNotFoundError)) throw error;
    throw new ProductsCommandError(notFoundText(productId, shop.shop));
  }
  if (entry) {
    await ctx.products.imports.recordProduct(space, {
      handle: entry.handle,
      productId: product.productId,
      title: product.title ?? null,
      status: product.status,
      variants: product.deletedOn ? entry.variants : product.variants.length,
      bodyDigest: entry.bodyDigest,
      lastImportId: entry.lastImportId,
      deletedOn: product.deletedOn ?? null,
    });
  }
  return product;
}

function notFoundText(productId: number, shop: string): string {
  return `the provider has no product ${productId} created through its interface for ${shop}'s store (products synced from Shopify are not reachable here)`;
}

function showText(p: Product): string {
  const lines = [
    `${p.handle} → provider product ${p.productId} in store ${p.storeId}${p.deletedOn ? ` (deleted ${p.deletedOn})` : ""}`,
    `  title: ${p.title ?? "-"}, status: ${p.status}, vendor: ${p.vendor ?? "-"}, type: ${p.productType ?? "-"}`,
    ...(p.tags && p.tags.length > 0 ? [`  tags: ${p.tags.join(", ")}`] : []),
  ];
  const variants = p.variants.map((v) => ({
    variantId: v.variantId,
    title: v.title ?? "",
    sku: v.sku ?? "",
    price: v.price ?? "",
    compareAtPrice: v.compareAtPrice ?? "",
    grams: v.grams ?? "",
  }));
  return variants.length > 0 ? `${lines.join("\n")}\n${formatTable(variants)}` : lines.join("\n");
}
