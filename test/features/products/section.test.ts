import { readFileSync } from "node:fs";
import { request } from "node:http";
import { UnrecoverableError, Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProducts } from "../../../src/features/products/compose.ts";
import { ProductImportQueue, productImportJobId } from "../../../src/features/products/index.ts";
import { startProductImportWorker } from "../../../src/features/products/worker.ts";
import { QUEUE, queueOptions } from "../../../src/queue/names.ts";
import {
  BROWSER_UA,
  type CookieJar,
  type InstallHarness,
  startInstallHarness,
} from "../../helpers/install-harness.ts";

const SHOP = "catalog-shop.myshopify.com";
const PROVIDER = { clientId: "merchant-client", clientSecret: "merchant-secret-4f9a1c" };

let h: InstallHarness;
let jar: CookieJar;
let worker: { close(): Promise<void> };

beforeAll(async () => {
  h = await startInstallHarness({ provider: { ...PROVIDER, stores: [1001] } });
  ({ jar } = await h.install(SHOP));
  await h.postForm("/settings/provider", { ...PROVIDER, environment: "production" }, jar);
  await h.postForm("/settings/store", { storeId: "1001" }, jar);
  worker = startWorker();
}, 60_000);

/** The worker role's product import worker, over the harness's connector. */
function startWorker() {
  return startProductImportWorker({
    ...createProducts(h.ctx, h.ctx.providers),
    getShop: (shop) => h.ctx.shops.getShop(shop),
    redis: h.ctx.redis,
    prefix: h.ctx.prefix,
    logger: h.ctx.logger,
  });
}
afterAll(async () => {
  await worker.close();
  await h.close();
});

/** The upload form as the browser sends it: multipart, same origin, the session cookie. */
function upload(name: string, content: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "text/csv" }), name);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  return fetch(new URL("/settings/catalog", h.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: { "user-agent": BROWSER_UA, origin: h.appUrl, cookie: jar.header() },
    body: form,
  });
}
/**
 * The same upload over node:http, for a body the server refuses before reading it. The server
 * answers 413 from the Content-Length and closes the connection; fetch (undici) then fails with
 * "other side closed" when the close comes while it is still writing, even with the answer in
 * hand, as it did on a loaded machine. A browser shows the answer; so does this.
 */
async function uploadRefusedEarly(name: string, content: string) {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "text/csv" }), name);
  const encoded = new Request("http://encode.invalid/", { method: "POST", body: form });
  const body = Buffer.from(await encoded.arrayBuffer());
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    let answered = false;
    const req = request(
      new URL("/settings/catalog", h.appUrl),
      {
        method: "POST",
        headers: {
          "content-type": encoded.headers.get("content-type") ?? "",
          "content-length": String(body.length),
          "user-agent": BROWSER_UA,
          origin: h.appUrl,
          cookie: jar.header(),
        },
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") });
          req.destroy();
        });
        res.on("error", reject);
      },
    );
    // Writing the rest of a refused body fails once the server closes: the answer counts.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    req.end(body);
  });
}
const page = async () => (await h.get("/settings", jar)).text();
const atProvider = () => h.provider.state.products.all.filter((p) => p.createdViaApi);

describe("settings page: catalog outside Shopify", () => {
  it("shows the section with the upload form", async () => {
    const html = await page();
    expect(html).toContain("Catalog outside Shopify");
    expect(html).toContain('action="/settings/catalog" enctype="multipart/form-data"');
  });

  it("refuses a bad file with its rows and fields listed, and imports nothing", async () => {
    const csv = [
      "handle,title,sku,price",
      "old-lamp,Old lamp,LAMP-1,24.00",
      "old-chair,Old chair,CHAIR-1,1.299,00",
      "trail-running-shoes,Shoes,SHOE-X,10.00",
    ].join("\n");
    const res = await upload("bad.csv", csv.replace("1.299,00", '"1.299,00"'));
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain("Nothing was imported: fix the rows listed below");
    expect(html).toMatch(
      /<td>3<\/td><td>price<\/td><td>&quot;1\.299,00&quot; has a thousands separator/,
    );
    expect(html).toMatch(
      /<td>4<\/td><td>handle<\/td><td>handle &quot;trail-running-shoes&quot; is a Shopify product \(gid:\/\/shopify\/Product\/7002\)/,
    );
    expect(html).toMatch(/data-count="invalid"><strong>1<\/strong>/);
    expect(html).toMatch(/data-count="refused"><strong>1<\/strong>/);
    expect(atProvider()).toEqual([]);
  });

  it("imports a good file in the workers and shows the last import's counts", async () => {
    const res = await upload("products.csv", readFileSync("examples/products.csv", "utf8"));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/settings?saved=catalog#catalog-title");
    const deadline = Date.now() + 30_000;
    let html = "";
    while (Date.now() < deadline) {
      html = await page();
      if (html.includes("Import completed.")) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(html).toContain("Last import: products.csv, 3 products");
    expect(html).toContain("Import completed.");
    expect(html).toMatch(/data-count="created"><strong>3<\/strong>/);
    expect(
      atProvider()
        .map((p) => p.handle)
        .sort(),
    ).toEqual(["classic-enamel-mug", "legacy-trail-jacket", "wholesale-tote-10-pack"]);
  }, 60_000);

  it.each([
    ["Redis lost", "unknown", "lost"],
    ["BullMQ failed unfinished (its worker killed too often)", "failed", "stalled"],
  ] as const)(
    "imports a file whose job %s, once a worker looks: queued again, sent once",
    async (_, gone, name) => {
      // No worker runs while the file is taken; then its job is gone, or failed as BullMQ fails
      // a job whose worker died too often: the import shows "running" with nothing to run it.
      await worker.close();
      const csv = [
        "handle,title,sku,price",
        `${name}-lantern,Lantern,${name.toUpperCase()}-LANTERN,31.00`,
        `${name}-flask,Flask,${name.toUpperCase()}-FLASK,12.50`,
      ].join("\n");
      expect((await upload(`${name}.csv`, csv)).status).toBe(303);
      const imports = createProducts(h.ctx, h.ctx.providers).imports;
      const [running] = await imports.toRunFromSettings();
      expect(running?.fileName).toBe(`${name}.csv`);
      const jobId = productImportJobId(running?.id ?? 0);
      const queue = new ProductImportQueue(h.ctx.redis, h.ctx.prefix);
      const taker = new Worker(QUEUE.productImport, null, queueOptions(h.ctx.redis, h.ctx.prefix));
      try {
        if (gone === "unknown") {
          await queue.queue.remove(jobId);
        } else {
          const job = await taker.getNextJob("taker");
          await job?.moveToFailed(
            new UnrecoverableError("job stalled more than allowable limit"),
            "taker",
          );
        }
        expect(await queue.queue.getJobState(jobId)).toBe(gone);
      } finally {
        await taker.close();
        await queue.close();
      }

      worker = startWorker();
      await expect
        .poll(page, { timeout: 30_000 })
        .toContain(`Last import: ${name}.csv, 2 products`);
      await expect.poll(page, { timeout: 30_000 }).toContain("Import completed.");
      const sent = atProvider().filter((p) => p.handle.startsWith(`${name}-`));
      expect(sent.map((p) => p.handle).sort()).toEqual([`${name}-flask`, `${name}-lantern`]);
    },
    60_000,
  );

  it("refuses a file that is too large, of another kind, or missing", async () => {
    const big = await uploadRefusedEarly("big.csv", `handle,sku\n${"x,y\n".repeat(1_400_000)}`);
    expect(big.status).toBe(413);
    expect(big.text).toContain("The file is larger than 5 MB: split it into smaller files.");
    const txt = await upload("products.txt", "handle\nx");
    expect(txt.status).toBe(400);
    expect(await txt.text()).toContain("Choose a .csv or a .json file.");
    const none = await upload("", "");
    expect(none.status).toBe(400);
    expect(await none.text()).toContain("Choose a .csv or a .json file to upload.");
  });
});
