import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProductImportRepository } from "../../../src/features/products/index.ts";
import { cliEntry, runCli } from "../../helpers/cli.ts";
import { type Pipeline, startPipeline, TEST_SHOP } from "../../helpers/pipeline.ts";
import { service } from "../../helpers/services.ts";

const ROOT = resolve(import.meta.dirname, "../../..");
const HEADER = "handle,title,option1_name,option1_value,sku,price,grams";

let p: Pipeline;
let dir: string;
/** What the CLI needs beyond runCli's environment: the sandbox and the stand-in Shopify. */
let env: Record<string, string>;

beforeAll(async () => {
  p = await startPipeline();
  dir = mkdtempSync(join(tmpdir(), "products-cli-"));
  env = {
    PROVIDER_BASE_URL: p.sandbox.url,
    PROVIDER_AUTH_URL: p.sandbox.authUrl,
    PROVIDER_AUDIENCE: p.sandbox.audience,
    SHOPIFY_ADMIN_URL: p.shopify.url,
    PROVIDER_RATE_LIMIT: "6000",
  };
});
afterAll(async () => {
  await p.close();
  rmSync(dir, { recursive: true, force: true });
});

const products = (...args: string[]) => runCli(p.ctx, ["products", ...args], env);
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
/** The products the sandbox holds that were created through its interface. */
const atProvider = () =>
  p.sandbox.state.products.all.filter((x) => x.createdViaApi && x.storeId === 1001);
const productAt = (handle: string) => atProvider().find((x) => x.handle === handle);

// Every CLI call starts a process (a few seconds under tsx on a busy machine).
const CLI_TEST_MS = 120_000;

describe("connector products import", () => {
  it(
    "imports the example CSV, then finds it unchanged, then sends it again with --force",
    async () => {
      const first = await products(
        "import",
        "--shop",
        TEST_SHOP,
        "--file",
        "examples/products.csv",
      );
      // Its progress on stderr (a log's line; a terminal gets a bar), the result on stdout.
      expect(first.stderr).toBe("products import: 3/3 products (3 created, 0 updated, 0 failed)\n");
      expect(first.code).toBe(0);
      expect(first.stdout.trim()).toMatch(
        /^import \d+: 3 products: 3 created, 0 updated, 0 unchanged, 0 skipped \(done before\), 0 invalid, 0 refused, 0 failed$/,
      );
      const mug = productAt("classic-enamel-mug");
      expect(mug?.variants.filter((v) => !v.removed)).toHaveLength(3);
      expect(mug?.fields).toMatchObject({ title: "Classic enamel mug", status: "archived" });

      const again = await products(
        "import",
        "--shop",
        TEST_SHOP,
        "--file",
        "examples/products.csv",
      );
      expect(again.stdout).toContain("0 created, 0 updated, 3 unchanged");
      const forced = await products(
        "import",
        ...["--shop", TEST_SHOP, "--file", "examples/products.csv", "--force", "--json"],
      );
      const summary = JSON.parse(forced.stdout);
      expect(summary).toMatchObject({ status: "completed", created: 0, updated: 3, failed: 0 });
      expect(summary.rows.map((r: { outcome: string }) => r.outcome)).toEqual([
        "updated",
        "updated",
        "updated",
      ]);
      // One product per handle, whatever was sent how often.
      expect(atProvider().filter((x) => x.handle === "classic-enamel-mug")).toHaveLength(1);

      const list = await products("list", "--shop", TEST_SHOP);
      const lines = list.stdout.trim().split("\n");
      expect(lines[0]).toMatch(/^\s*handle\s+productId\s+title\s+variants\s+status\s+lastImport/);
      expect(lines.slice(1).map((l) => l.trim().split(/\s+/)[0])).toEqual([
        "classic-enamel-mug",
        "legacy-trail-jacket",
        "wholesale-tote-10-pack",
      ]);
      expect(list.stdout).toContain(String(mug?.productId));
    },
    CLI_TEST_MS,
  );

  it(
    "shows a bad row's quoted value with its control characters escaped",
    async () => {
      const bad = file(
        "escape.csv",
        [HEADER, "old-lamp,Old lamp,,,LAMP-1,\u001b[2J9.00,"].join("\n"),
      );
      const rejected = await products("import", "--shop", TEST_SHOP, "--file", bad);
      expect(rejected.code).toBe(1);
      expect(rejected.stderr).not.toContain("\u001b");
      expect(rejected.stderr).toMatch(/^line 2 price: "\\u001b\[2J9\.00" /);
    },
    CLI_TEST_MS,
  );

  it(
    "reports each bad row by line and field, refuses Shopify's own products, sends nothing",
    async () => {
      const bad = file(
        "bad.csv",
        [
          HEADER,
          "old-lamp,Old lamp,,,LAMP-1,24.00,900",
          "old-chair,Old chair,,,CHAIR-1,$40.00,",
          "merino-socks,Socks again,,,SOCK-OLD,9.00,",
          "retro-shoes,Retro shoes,Size,42,TRAIL-42,80.00,",
        ].join("\n"),
      );
      const before = atProvider().length;
      const rejected = await products("import", "--shop", TEST_SHOP, "--file", bad);
      expect(rejected.code).toBe(1);
      expect(rejected.stderr.trim().split("\n")).toEqual([
        `line 3 price: "$40.00" has a currency symbol or other text: write a plain decimal in the store's currency; write 40.00`,
        `line 4 handle: handle "merino-socks" is a Shopify product (gid://shopify/Product/7003); the provider syncs it itself`,
        `line 5 sku: SKU "TRAIL-42" belongs to the Shopify product "trail-running-shoes" (gid://shopify/Product/7002); the provider syncs it itself`,
      ]);
      expect(rejected.stdout.trim()).toBe(
        "nothing imported: 1 invalid and 2 refused of 4 products; fix them, or pass --skip-invalid to import the rest",
      );
      expect(atProvider()).toHaveLength(before);

      const dry = await products(
        "import",
        ...["--shop", TEST_SHOP, "--file", bad, "--dry-run", "--json"],
      );
      expect(JSON.parse(dry.stdout)).toMatchObject({ status: "dry-run", invalid: 1, refused: 2 });
      expect(atProvider()).toHaveLength(before);

      const partial = await products(
        "import",
        ...["--shop", TEST_SHOP, "--file", bad, "--skip-invalid", "--json"],
      );
      expect(partial.code).toBe(1);
      const summary = JSON.parse(partial.stdout);
      expect(summary).toMatchObject({ created: 1, invalid: 1, refused: 2, status: "completed" });
      expect(
        summary.rows.map((r: { line: number; outcome: string }) => [r.line, r.outcome]),
      ).toEqual([
        [2, "created"],
        [3, "invalid"],
        [4, "refused"],
        [5, "refused"],
      ]);
      expect(atProvider().map((x) => x.handle)).toContain("old-lamp");
      expect(atProvider().map((x) => x.handle)).not.toContain("merino-socks");
    },
    CLI_TEST_MS,
  );

  it(
    "a dry run of a good file checks it and sends nothing; a bad file name is one line",
    async () => {
      const good = file(
        "good.json",
        JSON.stringify([{ handle: "dry-only", variants: [{ options: [], sku: "DRY-1" }] }]),
      );
      const dry = await products("import", "--shop", TEST_SHOP, "--file", good, "--dry-run");
      expect(dry.code).toBe(0);
      expect(dry.stdout.trim()).toBe(
        "dry run, nothing sent: 1 of 1 products ready, 0 invalid, 0 refused",
      );
      expect(productAt("dry-only")).toBeUndefined();

      const txt = await products("import", "--shop", TEST_SHOP, "--file", "products.txt");
      expect(txt.stderr.trim()).toBe(
        "connector: --file must be a .csv or a .json file (got products.txt)",
      );
      const missing = await products(
        "import",
        "--shop",
        TEST_SHOP,
        "--file",
        join(dir, "nope.csv"),
      );
      expect(missing.stderr.trim()).toBe(`connector: no such file: ${join(dir, "nope.csv")}`);
      const shop = await products("list", "--shop", "nobody.myshopify.com");
      expect(shop.code).toBe(2);
      expect(shop.stderr.trim()).toBe(
        `connector: no shop nobody.myshopify.com here: \`connector shops list\` shows the shops; install the app on it, or register it with \`connector shops add --shop nobody.myshopify.com …\``,
      );
    },
    CLI_TEST_MS,
  );
});

describe("connector products show and delete", () => {
  it(
    "reads a product from the provider by handle or productId, deletes it, twice",
    async () => {
      const json = file(
        "lamp.json",
        JSON.stringify([
          {
            handle: "brass-lamp",
            title: "Brass lamp",
            variants: [
              { options: [{ name: "Finish", value: "Matte" }], sku: "BL-M", price: "60.00" },
              { options: [{ name: "Finish", value: "Polished" }], sku: "BL-P", price: "65.00" },
            ],
          },
          { handle: "brass-shade", variants: [{ options: [], sku: "BS-1", price: "15.00" }] },
        ]),
      );
      expect((await products("import", "--shop", TEST_SHOP, "--file", json)).code).toBe(0);
      const id = productAt("brass-lamp")?.productId;

      const shown = await products("show", "--shop", TEST_SHOP, "brass-lamp");
      expect(shown.stdout.split("\n")[0]).toBe(`brass-lamp → provider product ${id} in store 1001`);
      expect(shown.stdout).toMatch(/BL-P\s+65\.00/);
      const byId = JSON.parse(
        (await products("show", "--shop", TEST_SHOP, String(id), "--json")).stdout,
      );
      expect(byId).toMatchObject({ productId: id, handle: "brass-lamp", status: "active" });
      expect(byId.variants).toHaveLength(2);

      const deleted = await products("delete", "--shop", TEST_SHOP, "brass-lamp");
      expect(deleted.code).toBe(0);
      expect(deleted.stdout).toContain(
        `deleted product ${id} (brass-lamp) at the provider, store 1001`,
      );
      expect(productAt("brass-lamp")?.deletedOn).not.toBeNull();
      expect((await products("delete", "--shop", TEST_SHOP, String(id))).code).toBe(0);
      const after = JSON.parse(
        (await products("show", "--shop", TEST_SHOP, "brass-lamp", "--json")).stdout,
      );
      expect(after.deletedOn).toEqual(expect.any(String));
      expect(after.variants).toEqual([]);
      const list = JSON.parse((await products("list", "--shop", TEST_SHOP, "--json")).stdout);
      expect(list.find((x: { handle: string }) => x.handle === "brass-lamp")?.status).toBe(
        "deleted",
      );

      // Deleted at the provider behind the connector's back: --refresh reads it back.
      p.sandbox.state.products.delete(productAt("brass-shade")?.productId ?? 0, [1001]);
      const status = async (...args: string[]) =>
        JSON.parse((await products("list", "--shop", TEST_SHOP, "--json", ...args)).stdout).find(
          (x: { handle: string }) => x.handle === "brass-shade",
        )?.status;
      expect(await status()).toBe("active");
      expect(await status("--refresh")).toBe("deleted");

      const unknown = await products("show", "--shop", TEST_SHOP, "never-imported");
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no product with handle "never-imported" was imported');
      // Every sandbox store holds one product synced from the platform: out of reach here.
      const synced = p.sandbox.state.products.all.find(
        (x) => !x.createdViaApi && x.storeId === 1001,
      );
      expect(synced).toBeDefined();
      const refused = await products("show", "--shop", TEST_SHOP, String(synced?.productId));
      expect(refused.stderr.trim()).toBe(
        `connector: the provider has no product ${synced?.productId} created through its interface for ${TEST_SHOP}'s store (products synced from Shopify are not reachable here)`,
      );
    },
    CLI_TEST_MS,
  );
});

describe("an import killed half-way", () => {
  it("resumes where it stood: every product exists once and the counts add up", async () => {
    const count = 12;
    const rows = Array.from(
      { length: count },
      (_, i) => `resume-${i},Resume ${i},,,RES-${i},${i}.50,`,
    );
    const path = file("resume.csv", [HEADER, ...rows].join("\n"));
    // A slow budget: 3 bulk requests per 2 s, paced, so the import takes several seconds.
    const slow = { ...env, PROVIDER_RATE_LIMIT: "4", PROVIDER_RATE_WINDOW_MS: "2000" };
    const child = spawn(
      process.execPath,
      [...cliEntry(), "products", "import", "--shop", TEST_SHOP, "--file", path],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          REDIS_URL: service("redisUrl"),
          REDIS_PREFIX: p.ctx.prefix,
          DATABASE_PATH: p.ctx.config.env.DATABASE_PATH,
          SHOPIFY_API_SECRET: p.ctx.config.shopifyApiSecret,
          LOG_LEVEL: "silent",
          ...slow,
        },
        stdio: "ignore",
      },
    );
    const exited = new Promise((r) => child.once("exit", r));
    const imports = new ProductImportRepository(p.ctx.db);
    const deadline = Date.now() + 30_000;
    let done = 0;
    while (Date.now() < deadline) {
      const latest = await imports.latest(TEST_SHOP);
      if (latest?.fileName === "resume.csv") {
        done = (await imports.rows(latest.id)).filter((r) => r.outcome === "created").length;
        if (done >= 4) break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill("SIGKILL");
    await exited;
    expect(done).toBeGreaterThanOrEqual(4);
    expect(done).toBeLessThan(count);

    const resumed = await runCli(
      p.ctx,
      ["products", "import", "--shop", TEST_SHOP, "--file", path, "--json"],
      slow,
    );
    expect(resumed.code).toBe(0);
    const summary = JSON.parse(resumed.stdout);
    expect(summary.resumed).toBe(true);
    expect(summary.updated).toBe(0);
    expect(summary.failed).toBe(0);
    // Done before the kill (its answer recorded, or sent and answered again) + sent now = all.
    expect(summary.skipped).toBeGreaterThanOrEqual(done);
    expect(summary.created + summary.skipped).toBe(count);
    const record = await imports.latest(TEST_SHOP);
    expect(record?.status).toBe("completed");
    const outcomes = (await imports.rows(record?.id ?? 0)).map((r) => r.outcome);
    expect(outcomes).toEqual(Array(count).fill("created"));
    for (let i = 0; i < count; i++) {
      expect(atProvider().filter((x) => x.handle === `resume-${i}`)).toHaveLength(1);
    }
  }, 90_000);
});
