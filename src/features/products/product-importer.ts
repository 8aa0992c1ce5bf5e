import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { StoreRateLimiter } from "../../engine/limiter/index.ts";
import { releaseLock } from "../../lib/lock.ts";
import type { RedisConnection } from "../../lib/redis-keys.ts";
import {
  type ProductCreate,
  type ProviderClient,
  ProviderConnectionError,
  ProviderError,
  ProviderServerError,
  ProviderValidationError,
} from "../../provider/index.ts";
import type { ShopifyCatalogIndex } from "../../shopify/catalog-index.ts";
import {
  type FileProblem,
  type FileProduct,
  type ProductFileFormat,
  parseProductFile,
} from "./product-file.ts";
import type {
  ImportRecord,
  ImportRow,
  NewImportRow,
  ProductImportRepository,
  ProductSpace,
  RowOutcome,
} from "./repository.ts";

export interface ProductImporterDeps {
  imports: ProductImportRepository;
  limiter: StoreRateLimiter;
  /** The per-shop import lock. */
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
}

/** One shop's provider store, its client (wired to the limiter) and its Shopify catalog. */
export interface ImportTarget {
  space: ProductSpace;
  client: ProviderClient;
  readShopifyCatalog(): Promise<ShopifyCatalogIndex>;
}

export interface ImportOptions {
  skipInvalid?: boolean;
  /** Send products whose body is the same as the one last sent (unchanged otherwise). */
  force?: boolean;
  source: "cli" | "settings";
}

/** What one run did to each product of the file. */
export type RunOutcome =
  | "ready"
  | "created"
  | "updated"
  | "unchanged"
  | "skipped"
  | "invalid"
  | "refused"
  | "failed";

export interface RunRow {
  line: number;
  handle: string;
  outcome: RunOutcome;
  productId: number | null;
  problems: FileProblem[];
}

export interface ImportSummary {
  importId: number | null;
  status: "dry-run" | "rejected" | "completed" | "interrupted";
  resumed: boolean;
  /** Products in the file. */
  total: number;
  created: number;
  updated: number;
  /** Sent before with the same body: not sent again. */
  unchanged: number;
  /** Done by an earlier run of this import (resumed): not sent again. */
  skipped: number;
  invalid: number;
  refused: number;
  failed: number;
  /** Problems of the whole file (a bad header): nothing was imported. */
  fileProblems: FileProblem[];
  rows: RunRow[];
  error?: string;
}

/** The prepared import: checked, and recorded unless it was a dry run or the file is bad. */
export interface PreparedImport {
  summary: ImportSummary;
  /** The import to run (null for a dry run or a rejected file). */
  importId: number | null;
}

/** Another import of the same shop holds the lock. */
export class ImportBusyError extends Error {
  override name = "ImportBusyError";
}

/** The run stopped before the end (provider down, credentials, Ctrl-C); it resumes. */
export class ImportInterruptedError extends Error {
  override name = "ImportInterruptedError";
  constructor(
    message: string,
    readonly summary: ImportSummary,
  ) {
    super(message);
  }
}

type Counted = Exclude<RunOutcome, "ready">;
const FINAL: RowOutcome[] = ["created", "updated", "unchanged", "invalid", "refused", "failed"];
const LOCK_TTL_MS = 10_000;
/** 5xx and lost answers: retried after these pauses, then the run stops (and resumes later). */
const SERVER_RETRIES_MS = [1_000, 3_000, 9_000];

export const bodyDigest = (body: ProductCreate) =>
  createHash("sha256").update(JSON.stringify(body)).digest("hex");

function emptySummary(total: number): ImportSummary {
  return {
    importId: null,
    status: "completed",
    resumed: false,
    total,
    created: 0,
    updated: 0,
    unchanged: 0,
    skipped: 0,
    invalid: 0,
    refused: 0,
    failed: 0,
    fileProblems: [],
    rows: [],
  };
}

/**
 * Imports products that live outside Shopify into the provider (POST /products, idempotent by
 * handle): validated against the write-body rules, checked against the shop's Shopify catalog
 * (a handle or SKU Shopify has is refused: the provider syncs those itself), then sent one at a
 * time through the store's limiter at bulk priority, each row's outcome recorded as it comes.
 */
export class ProductImporter {
  constructor(private readonly deps: ProductImporterDeps) {}

  /**
   * Parses and checks the file; records the import unless this is a dry run. A file with
   * invalid or refused products is recorded as rejected and sends nothing, unless
   * `skipInvalid`. The same file, unfinished, is resumed rather than started again.
   */
  async prepare(
    target: ImportTarget,
    file: { name: string; text: string; format: ProductFileFormat },
    options: ImportOptions & { dryRun?: boolean },
  ): Promise<PreparedImport> {
    const parsed = parseProductFile(file.text, file.format);
    const summary = emptySummary(parsed.products.length);
    summary.fileProblems = parsed.fileProblems;
    const catalog = parsed.fileProblems.length > 0 ? null : await target.readShopifyCatalog();
    const rows: NewImportRow[] = parsed.products.map((product) => {
      const problems = [...product.problems];
      if (product.body?.storeId !== undefined && product.body.storeId !== target.space.storeId) {
        problems.push({
          line: product.line,
          field: "storeId",
          handle: product.handle,
          message: `the shop sends to store ${target.space.storeId}: leave storeId out`,
        });
      }
      const refusals = catalog ? refusalsOf(product, catalog) : [];
      const outcome: RowOutcome =
        problems.length > 0 ? "invalid" : refusals.length > 0 ? "refused" : "pending";
      const body = outcome === "pending" && product.body ? withStore(product.body, target) : null;
      return {
        position: product.position,
        line: product.line,
        handle: product.handle,
        body,
        bodyDigest: body ? bodyDigest(body) : null,
        outcome,
        problems: [...problems, ...refusals],
      };
    });
    for (const row of rows) {
      if (row.outcome === "invalid") summary.invalid++;
      if (row.outcome === "refused") summary.refused++;
      summary.rows.push({
        line: row.line,
        handle: row.handle,
        outcome: row.outcome === "invalid" || row.outcome === "refused" ? row.outcome : "ready",
        productId: null,
        problems: row.problems,
      });
    }
    const bad = parsed.fileProblems.length > 0 || summary.invalid + summary.refused > 0;
    if (options.dryRun) return { summary: { ...summary, status: "dry-run" }, importId: null };
    const record = {
      fileName: file.name,
      digest: parsed.digest,
      format: file.format,
      source: options.source,
      skipInvalid: options.skipInvalid ?? false,
      force: options.force ?? false,
    };
    if (parsed.fileProblems.length > 0 || (bad && !options.skipInvalid)) {
      const importId = await this.deps.imports.create(
        target.space,
        { ...record, status: "rejected" },
        rows,
      );
      return { summary: { ...summary, importId, status: "rejected" }, importId: null };
    }
    const resumable = await this.deps.imports.findResumable(target.space, parsed.digest, {
      skipInvalid: record.skipInvalid,
      force: record.force,
    });
    if (resumable) {
      return {
        summary: { ...summary, importId: resumable.id, resumed: true },
        importId: resumable.id,
      };
    }
    const importId = await this.deps.imports.create(
      target.space,
      { ...record, status: "running" },
      rows,
    );
    return { summary: { ...summary, importId }, importId };
  }

  /**
   * Sends every product of the import not yet done, one at a time, each when the store's
   * limiter grants a bulk slot (live orders go first) and after any 429's Retry-After. Rows done
   * by an earlier run are counted as skipped; a row sent by an earlier run whose answer was
   * lost is sent again (the provider resolves it by handle) and counted as done before.
   */
  async run(
    target: ImportTarget,
    importId: number,
    options: {
      onProgress?: (done: number, total: number, summary: ImportSummary) => void;
      signal?: AbortSignal;
    } = {},
  ): Promise<ImportSummary> {
    const { imports } = this.deps;
    const record = await imports.get(importId);
    if (!record) throw new Error(`product import ${importId} does not exist`);
    const release = await this.#lock(record.shop);
    const rows = await imports.rows(importId);
    const summary = emptySummary(rows.length);
    summary.importId = importId;
    summary.resumed = rows.some(
      (r) => r.outcome === "sent" || (r.body && FINAL.includes(r.outcome)),
    );
    const done = () => summary.rows.length;
    try {
      await imports.setStatus(importId, "running");
      for (const row of rows) {
        options.signal?.throwIfAborted();
        summary.rows.push(await this.#row(target, record, row, summary, options.signal));
        options.onProgress?.(done(), rows.length, summary);
      }
      await imports.setStatus(importId, "completed");
      return summary;
    } catch (error) {
      const message = interruption(error);
      await imports.setStatus(importId, "interrupted", message);
      summary.status = "interrupted";
      summary.error = message;
      throw new ImportInterruptedError(message, summary);
    } finally {
      await release();
    }
  }

  async #row(
    target: ImportTarget,
    record: ImportRecord,
    row: ImportRow,
    summary: ImportSummary,
    signal: AbortSignal | undefined,
  ): Promise<RunRow> {
    const view = (outcome: Counted, productId = row.productId, problems = row.problems) => {
      summary[outcome]++;
      return { line: row.line, handle: row.handle, outcome, productId, problems };
    };
    if (row.outcome === "invalid" || row.outcome === "refused") return view(row.outcome);
    if (row.outcome === "failed") return view("failed");
    if (FINAL.includes(row.outcome)) return view("skipped");
    const body = row.body as ProductCreate;
    const { imports } = this.deps;
    const entry = await imports.catalogEntry(target.space, row.handle);
    const sentBefore = row.outcome === "sent";
    if (
      !record.force &&
      !sentBefore &&
      entry &&
      entry.deletedOn === null &&
      entry.bodyDigest === row.bodyDigest
    ) {
      await imports.finishRow(record.id, row.position, {
        outcome: "unchanged",
        productId: entry.productId,
      });
      return view("unchanged", entry.productId);
    }
    let result: {
      product: {
        productId: number;
        status: string;
        title?: string | null | undefined;
        variants: unknown[];
      };
      created: boolean;
      /** An attempt of this run may have reached the provider without its answer coming back. */
      replayed: boolean;
    };
    try {
      result = await this.#send(target, record.id, row.position, body, signal);
    } catch (error) {
      if (!(error instanceof ProviderValidationError)) throw error;
      const problems: FileProblem[] = [
        {
          line: row.line,
          field: error.fields.map((f) => f.path).join(", "),
          handle: row.handle,
          message: `the provider refused the product (${error.status ?? 400}): ${error.fields.map((f) => `${f.path}: ${f.message}`).join("; ") || error.message}`,
        },
      ];
      await imports.finishRow(record.id, row.position, { outcome: "failed", problems });
      return view("failed", null, problems);
    }
    const { product, created, replayed } = result;
    // 200 on a row an earlier attempt sent: that attempt's answer was lost. The connector's
    // record had no product under this handle, so it was that attempt that created it.
    const outcome: RowOutcome =
      created || ((sentBefore || replayed) && !entry) ? "created" : "updated";
    await imports.finishRow(record.id, row.position, { outcome, productId: product.productId });
    await imports.recordProduct(target.space, {
      handle: row.handle,
      productId: product.productId,
      title: product.title ?? body.title ?? null,
      status: product.status,
      variants: product.variants.length,
      bodyDigest: row.bodyDigest,
      lastImportId: record.id,
      deletedOn: null,
    });
    if (sentBefore && !created) return view("skipped", product.productId);
    return view(outcome, product.productId);
  }

  /** One POST through the limiter: waits for a bulk slot, obeys 429s, retries 5xx briefly. */
  async #send(
    target: ImportTarget,
    importId: number,
    position: number,
    body: ProductCreate,
    signal: AbortSignal | undefined,
  ) {
    const { limiter, imports } = this.deps;
    const { storeId } = target.space;
    // The token first: a slot is taken only when the request can leave at once.
    await target.client.getTokenInfo();
    let serverFailures = 0;
    let replayed = false;
    for (;;) {
      try {
        const answer = await callAtBulkPriority(
          limiter,
          storeId,
          async () => {
            await imports.markSent(importId, position);
            return target.client.createProduct(body);
          },
          signal,
        );
        return { ...answer, replayed };
      } catch (error) {
        // A 5xx or a lost answer may come after the write: the next 200 may be our own create.
        if (error instanceof ProviderServerError || error instanceof ProviderConnectionError) {
          replayed = true;
        }
        const retryable =
          error instanceof ProviderServerError || error instanceof ProviderConnectionError;
        const pause = SERVER_RETRIES_MS[serverFailures];
        if (!retryable || pause === undefined) throw error;
        serverFailures++;
        this.deps.logger.warn(
          { importId, storeId, status: (error as ProviderError).status ?? null, pauseMs: pause },
          "product import: the provider failed; trying the same product again",
        );
        await sleep(pause, undefined, signal ? { signal } : {});
      }
    }
  }

  /**
   * One import per shop at a time. A lock left by a process that was killed expires within
   * its TTL: the next run waits that long for it before giving up.
   */
  async #lock(shop: string): Promise<() => Promise<void>> {
    const { redis, prefix } = this.deps;
    const key = `${prefix}:products:import-lock:{${shop}}`;
    const owner = randomUUID();
    const deadline = Date.now() + LOCK_TTL_MS + 2_000;
    while ((await redis.set(key, owner, "PX", LOCK_TTL_MS, "NX")) !== "OK") {
      if (Date.now() > deadline) {
        throw new ImportBusyError(
          `another product import of ${shop} is running; wait for it to end, then run this one again`,
        );
      }
      await sleep(250);
    }
    const renew = setInterval(() => {
      redis.set(key, owner, "PX", LOCK_TTL_MS, "XX").catch(() => {});
    }, LOCK_TTL_MS / 3);
    renew.unref();
    return async () => {
      clearInterval(renew);
      await releaseLock(redis, key, owner).catch(() => false);
    };
  }
}

/**
 * One provider call for bulk work outside the queue (the CLI, an import job), through the
 * store's limiter (`limiter.call`): it waits in the process for a bulk slot (live orders go
 * first) and, after a 429, for the store's block to end, as long as it takes or until `signal`.
 */
export async function callAtBulkPriority<T>(
  limiter: StoreRateLimiter,
  storeId: number,
  call: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const sent = await limiter.call(storeId, "bulk", call, {
    waiter: `products:${randomUUID()}`,
    waitUntil: Number.POSITIVE_INFINITY,
    ...(signal ? { signal } : {}),
  });
  // Without a deadline the limiter comes back only with the answer (or the signal's abort).
  if (!sent.done) throw new Error(`the limiter stopped waiting for a slot (${sent.reason})`);
  return sent.value;
}

function withStore(body: ProductCreate, target: ImportTarget): ProductCreate {
  return { ...body, storeId: target.space.storeId };
}

/** Handles and SKUs that Shopify's own catalog has: the provider syncs those products itself. */
function refusalsOf(product: FileProduct, catalog: ShopifyCatalogIndex): FileProblem[] {
  const refusals: FileProblem[] = [];
  const handle = product.handle;
  const shopifyProduct = handle ? catalog.handles.get(handle.toLowerCase()) : undefined;
  if (shopifyProduct) {
    refusals.push({
      line: product.line,
      field: "handle",
      handle,
      message: `handle "${handle}" is a Shopify product (${shopifyProduct}); the provider syncs it itself`,
    });
  }
  for (const { sku, line } of product.skus) {
    const owner = catalog.skus.get(sku.toLowerCase());
    if (owner) {
      refusals.push({
        line,
        field: "sku",
        handle,
        message: `SKU "${sku}" belongs to the Shopify product "${owner.handle}" (${owner.productId}); the provider syncs it itself`,
      });
    }
  }
  return refusals;
}

/** Why a run stopped, in one line with what to do. */
function interruption(error: unknown): string {
  if (error instanceof Error && error.name === "AbortError") {
    return "stopped before the end; run the same import again to resume";
  }
  if (error instanceof ProviderError) {
    const status = error.status ? ` ${error.status}` : "";
    const fix =
      error.status === 401 || error.status === 403
        ? "check the shop's provider credentials (connector shops update)"
        : error.status === 404
          ? "the credentials do not cover the shop's store: check --store-id (connector shops update)"
          : "run the same import again to resume";
    return `the provider answered${status} to ${error.method} ${error.path} (${error.name}): ${fix}`;
  }
  return `${error instanceof Error ? error.message : String(error)}; run the same import again to resume`;
}
