import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ProductImportRepository } from "../../../src/features/products/index.ts";
import { type Db, openDatabase } from "../../../src/store/index.ts";
import { createTestDatabase } from "../../helpers/postgres.ts";
import { service } from "../../helpers/services.ts";

const opened: Db[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const db of opened) await db.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const ENGINES = {
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), "product-imports-"));
    dirs.push(dir);
    return openDatabase(join(dir, "connector.sqlite"));
  },
  postgres: async () => openDatabase(await createTestDatabase(service("postgresUrl"))),
};

const SPACE = { shop: "repo-shop.myshopify.com", storeId: 1001, providerBaseUrl: "http://p/v1" };
const FILE = {
  fileName: "f.csv",
  digest: "d1",
  format: "csv" as const,
  source: "cli" as const,
  skipInvalid: false,
  force: false,
};
const body = (handle: string) => ({ handle, variants: [{ options: [], sku: handle }] });

describe.each(Object.keys(ENGINES) as (keyof typeof ENGINES)[])(
  "product imports on %s",
  (engine) => {
    it("records rows, resumes the unfinished import of the same file, and keeps the catalog", async () => {
      const db = await ENGINES[engine]();
      opened.push(db);
      await db.ready();
      const repo = new ProductImportRepository(db);
      const rows = Array.from({ length: 450 }, (_, i) => ({
        position: i,
        line: i + 2,
        handle: `h-${i}`,
        body: body(`h-${i}`),
        bodyDigest: `b-${i}`,
        outcome: "pending" as const,
        problems: [],
      }));
      const id = await repo.create(SPACE, { ...FILE, status: "running" }, rows);
      await repo.markSent(id, 0);
      await repo.finishRow(id, 1, { outcome: "created", productId: 50_001 });
      const stored = await repo.rows(id);
      expect(stored).toHaveLength(450);
      expect(stored.slice(0, 3).map((r) => [r.outcome, r.productId])).toEqual([
        ["sent", null],
        ["created", 50_001],
        ["pending", null],
      ]);
      expect(stored[2]?.body).toEqual(body("h-2"));

      // Same file, same options, same space: resumed; other options or a finished one: not.
      expect(
        (await repo.findResumable(SPACE, "d1", { skipInvalid: false, force: false }))?.id,
      ).toBe(id);
      expect(await repo.findResumable(SPACE, "d1", { skipInvalid: true, force: false })).toBeNull();
      expect(
        await repo.findResumable({ ...SPACE, storeId: 1002 }, "d1", {
          skipInvalid: false,
          force: false,
        }),
      ).toBeNull();
      await repo.setStatus(id, "completed");
      expect(
        await repo.findResumable(SPACE, "d1", { skipInvalid: false, force: false }),
      ).toBeNull();
      expect((await repo.latest(SPACE.shop))?.finishedAt).toEqual(expect.any(String));

      const entry = {
        handle: "h-1",
        productId: 50_001,
        title: "One",
        status: "active",
        variants: 1,
        bodyDigest: "b-1",
        lastImportId: id,
        deletedOn: null,
      };
      await repo.recordProduct(SPACE, entry);
      await repo.recordProduct(SPACE, { ...entry, title: "One, again", variants: 2 });
      await repo.markDeleted(SPACE, "h-1", "2026-11-25T00:00:00.000Z");
      const listed = await repo.listCatalog(SPACE);
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({
        title: "One, again",
        variants: 2,
        deletedOn: "2026-11-25T00:00:00.000Z",
      });
      expect((await repo.catalogByProductId(SPACE, 50_001))?.handle).toBe("h-1");
      expect(
        await repo.catalogEntry({ ...SPACE, providerBaseUrl: "http://staging/v1" }, "h-1"),
      ).toBeNull();
    });
  },
);
