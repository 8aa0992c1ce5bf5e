import { and, asc, desc, eq, inArray } from "drizzle-orm";
import type { ProductCreate } from "../../provider/index.ts";
import type { Db, schema } from "../../store/index.ts";

/** One reason a file cannot be imported as it is: where (the file's line), which field, why. */
export interface FileProblem {
  /** The line of the file (1-based), or null when the whole file is at fault. */
  line: number | null;
  /** The column (CSV) or the path in the item (JSON). */
  field: string;
  message: string;
  handle?: string;
}

type Imports = typeof schema.productImports;
type Rows = typeof schema.productImportRows;
type Catalog = typeof schema.catalogProducts;

export type ImportStatus = Imports["$inferSelect"]["status"];
export type RowOutcome = Rows["$inferSelect"]["outcome"];
export type ImportRecord = Imports["$inferSelect"];

/** Where a shop's products live at the provider: its store in one environment (API base). */
export interface ProductSpace {
  shop: string;
  storeId: number;
  providerBaseUrl: string;
}

export interface ImportRow {
  importId: number;
  position: number;
  line: number;
  handle: string;
  body: ProductCreate | null;
  bodyDigest: string | null;
  outcome: RowOutcome;
  problems: FileProblem[];
  productId: number | null;
  sentAt: string | null;
  doneAt: string | null;
}

export type NewImportRow = Pick<
  ImportRow,
  "position" | "line" | "handle" | "body" | "bodyDigest" | "outcome" | "problems"
>;

export type CatalogProduct = Catalog["$inferSelect"];

const now = () => new Date().toISOString();
/** Rows are inserted in batches: one statement per 200 rows stays under both engines' limits. */
const INSERT_BATCH = 200;

/**
 * Imports of legacy products and the connector's record of what it created at the provider
 * (handle → productId per shop and provider store). Every row's outcome is written as it is
 * known, so an import killed half-way resumes where it stood.
 */
export class ProductImportRepository {
  constructor(private readonly db: Db) {}

  /** Records an import and its rows; it is `pending` until every row is written. */
  async create(
    space: ProductSpace,
    input: {
      fileName: string;
      digest: string;
      format: "csv" | "json";
      source: "cli" | "settings";
      skipInvalid: boolean;
      force: boolean;
      status: "rejected" | "running";
    },
    rows: NewImportRow[],
  ): Promise<number> {
    const { productImports, productImportRows } = this.db.t;
    const at = now();
    const [created] = await this.db.orm
      .insert(productImports)
      .values({ ...space, ...input, status: "pending", createdAt: at, updatedAt: at })
      .returning({ id: productImports.id });
    const id = (created as { id: number }).id;
    for (let i = 0; i < rows.length; i += INSERT_BATCH) {
      await this.db.orm.insert(productImportRows).values(
        rows.slice(i, i + INSERT_BATCH).map((r) => ({
          importId: id,
          position: r.position,
          line: r.line,
          handle: r.handle,
          body: r.body ? JSON.stringify(r.body) : null,
          bodyDigest: r.bodyDigest,
          outcome: r.outcome,
          problems: r.problems.length > 0 ? JSON.stringify(r.problems) : null,
          ...(input.status === "rejected" ? { doneAt: at } : {}),
        })),
      );
    }
    await this.setStatus(id, input.status);
    return id;
  }

  /** The unfinished import of this very file, with the same options, in the same space. */
  async findResumable(
    space: ProductSpace,
    digest: string,
    options: { skipInvalid: boolean; force: boolean },
  ): Promise<ImportRecord | null> {
    const t = this.db.t.productImports;
    const [found] = await this.db.orm
      .select()
      .from(t)
      .where(
        and(
          eq(t.shop, space.shop),
          eq(t.storeId, space.storeId),
          eq(t.providerBaseUrl, space.providerBaseUrl),
          eq(t.digest, digest),
          eq(t.skipInvalid, options.skipInvalid),
          eq(t.force, options.force),
          inArray(t.status, ["running", "interrupted"]),
        ),
      )
      .orderBy(desc(t.id))
      .limit(1);
    return found ?? null;
  }

  async get(id: number): Promise<ImportRecord | null> {
    const t = this.db.t.productImports;
    const [found] = await this.db.orm.select().from(t).where(eq(t.id, id));
    return found ?? null;
  }

  /**
   * Every shop's imports started from the settings page that are still to run (queued, or
   * running now): their job is what runs them. An import of the CLI runs in its own process.
   */
  async toRunFromSettings(): Promise<ImportRecord[]> {
    const t = this.db.t.productImports;
    return this.db.orm
      .select()
      .from(t)
      .where(and(eq(t.source, "settings"), eq(t.status, "running")));
  }

  /** The shop's most recent import (any status but the half-written `pending`). */
  async latest(shop: string): Promise<ImportRecord | null> {
    const t = this.db.t.productImports;
    const [found] = await this.db.orm
      .select()
      .from(t)
      .where(
        and(
          eq(t.shop, shop),
          inArray(t.status, ["rejected", "running", "interrupted", "completed"]),
        ),
      )
      .orderBy(desc(t.id))
      .limit(1);
    return found ?? null;
  }

  async rows(importId: number): Promise<ImportRow[]> {
    const t = this.db.t.productImportRows;
    const rows = await this.db.orm
      .select()
      .from(t)
      .where(eq(t.importId, importId))
      .orderBy(asc(t.position));
    return rows.map((r) => ({
      ...r,
      body: r.body ? (JSON.parse(r.body) as ProductCreate) : null,
      problems: r.problems ? (JSON.parse(r.problems) as FileProblem[]) : [],
    }));
  }

  async setStatus(id: number, status: ImportStatus, error: string | null = null): Promise<void> {
    const t = this.db.t.productImports;
    const at = now();
    await this.db.orm
      .update(t)
      .set({
        status,
        error,
        updatedAt: at,
        ...(status === "completed" || status === "rejected" ? { finishedAt: at } : {}),
      })
      .where(eq(t.id, id));
  }

  /** Written just before the request leaves: a resumed import knows the row may have arrived. */
  async markSent(importId: number, position: number): Promise<void> {
    const t = this.db.t.productImportRows;
    await this.db.orm
      .update(t)
      .set({ outcome: "sent", sentAt: now() })
      .where(and(eq(t.importId, importId), eq(t.position, position)));
  }

  async finishRow(
    importId: number,
    position: number,
    result: { outcome: RowOutcome; productId?: number | null; problems?: FileProblem[] },
  ): Promise<void> {
    const t = this.db.t.productImportRows;
    await this.db.orm
      .update(t)
      .set({
        outcome: result.outcome,
        ...(result.productId !== undefined ? { productId: result.productId } : {}),
        ...(result.problems ? { problems: JSON.stringify(result.problems) } : {}),
        doneAt: now(),
      })
      .where(and(eq(t.importId, importId), eq(t.position, position)));
  }

  // -- the connector's record of its products at the provider --------------------------------

  async catalogEntry(space: ProductSpace, handle: string): Promise<CatalogProduct | null> {
    const t = this.db.t.catalogProducts;
    const [found] = await this.db.orm
      .select()
      .from(t)
      .where(and(...this.#inSpace(space), eq(t.handle, handle)));
    return found ?? null;
  }

  async catalogByProductId(space: ProductSpace, productId: number): Promise<CatalogProduct | null> {
    const t = this.db.t.catalogProducts;
    const [found] = await this.db.orm
      .select()
      .from(t)
      .where(and(...this.#inSpace(space), eq(t.productId, productId)));
    return found ?? null;
  }

  async listCatalog(space: ProductSpace): Promise<CatalogProduct[]> {
    const t = this.db.t.catalogProducts;
    return await this.db.orm
      .select()
      .from(t)
      .where(and(...this.#inSpace(space)))
      .orderBy(asc(t.handle));
  }

  async recordProduct(
    space: ProductSpace,
    entry: Omit<CatalogProduct, "shop" | "storeId" | "providerBaseUrl" | "importedAt">,
  ): Promise<void> {
    const t = this.db.t.catalogProducts;
    const values = { ...space, ...entry, importedAt: now() };
    const { shop: _s, storeId: _i, providerBaseUrl: _b, handle: _h, ...changes } = values;
    await this.db.orm
      .insert(t)
      .values(values)
      .onConflictDoUpdate({
        target: [t.shop, t.storeId, t.providerBaseUrl, t.handle],
        set: changes,
      });
  }

  async markDeleted(space: ProductSpace, handle: string, deletedOn: string): Promise<void> {
    const t = this.db.t.catalogProducts;
    await this.db.orm
      .update(t)
      .set({ deletedOn })
      .where(and(...this.#inSpace(space), eq(t.handle, handle)));
  }

  #inSpace(space: ProductSpace) {
    const t = this.db.t.catalogProducts;
    return [
      eq(t.shop, space.shop),
      eq(t.storeId, space.storeId),
      eq(t.providerBaseUrl, space.providerBaseUrl),
    ];
  }
}
