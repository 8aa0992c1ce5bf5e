import { execFile, spawn } from "node:child_process";
import { createCipheriv, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createSecretBox, sealedFor } from "../../src/lib/secret-box.ts";
import {
  openDatabase,
  ProviderWebhookSecretRepository,
  ShopRepository,
} from "../../src/store/index.ts";
import { cliEntry, connectorEntry } from "../helpers/cli.ts";
import { newModelOrder } from "../helpers/order-lifecycle.ts";
import { startPipeline, TEST_SHOP } from "../helpers/pipeline.ts";
import { service } from "../helpers/services.ts";
import { orderPayload } from "../helpers/shopify-order-builder.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const OLD_KEY = Buffer.alloc(32, 21).toString("base64");
const NEW_KEY = Buffer.alloc(32, 42).toString("base64");
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("provider tokens in Redis", () => {
  it("are sealed: the cached value holds no bearer token", async () => {
    const p = await startPipeline();
    const redis = new Redis(service("redisUrl"));
    try {
      expect(
        (await p.send("orders/create", orderPayload(newModelOrder(8_001, 8_001_000)))).status,
      ).toBe(200);
      await p.drain();
      const keys = (await redis.keys(`${p.ctx.prefix}:token:*`)).filter((k) =>
        /:token:[0-9a-f]{24}$/.test(k),
      );
      expect(keys.length).toBeGreaterThan(0);
      const shop = await p.ctx.shops.getShop(TEST_SHOP);
      if (!shop) throw new Error("the test shop is missing");
      const token = (await p.ctx.providers.for(shop).getTokenInfo()).token;
      for (const key of keys) {
        const value = (await redis.get(key)) ?? "";
        // No JWT, whole or in part: none of the token's parts, nothing shaped like one. (A bare
        // "eyJ" proves nothing: the sealed base64 holds it by chance in about one value in 100,
        // and the fresh-clone run s29h failed so.)
        expect(value).not.toContain(token);
        for (const part of token.split(".")) expect(value).not.toContain(part);
        expect(value).not.toMatch(/eyJ[\w-]{10,}\.[\w-]{10,}/);
        expect(JSON.parse(value).sealed).toMatch(/^v2:/);
      }
    } finally {
      redis.disconnect();
      await p.close();
    }
  });
});

/** A value as the previous version sealed it: `v1:`, no key id, no associated data. */
function sealV1(keyBase64: string, plain: string): string {
  const iv = Buffer.alloc(12, 3);
  const cipher = createCipheriv("aes-256-gcm", Buffer.from(keyBase64, "base64"), iv);
  const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), data]).toString("base64")}`;
}

/** A provider account's webhook signing secret, sealed like the shops' secrets. */
const WEBHOOK_ACCOUNT = { providerBaseUrl: "https://api.provider.test/v1", clientId: "client-b" };

async function storeWithOldSecrets(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "rotate-"));
  dirs.push(dir);
  const path = join(dir, "connector.sqlite");
  const db = openDatabase(path);
  const old = createSecretBox(OLD_KEY);
  const shops = new ShopRepository(db);
  await shops.upsertShop("a.myshopify.com", {
    providerClientSecretSealed: old.seal(
      "secret-a",
      sealedFor.providerClientSecret("a.myshopify.com"),
    ),
    accessTokenSealed: sealV1(OLD_KEY, "shpat_a"),
    refreshTokenSealed: old.seal("shprt_a", sealedFor.shopifyRefreshToken("a.myshopify.com")),
  });
  await shops.upsertShop("b.myshopify.com", {
    providerClientSecretSealed: sealV1(OLD_KEY, "secret-b"),
  });
  await new ProviderWebhookSecretRepository(db).set(
    WEBHOOK_ACCOUNT,
    old.seal(
      "whsec-account-b",
      sealedFor.providerWebhookSecret(WEBHOOK_ACCOUNT.providerBaseUrl, WEBHOOK_ACCOUNT.clientId),
    ),
  );
  await db.close();
  return path;
}

const execCli = promisify(execFile);
async function cli(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await execCli(process.execPath, [...cliEntry(), ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        LOG_LEVEL: "silent",
        ...env,
      },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function startMain(env: Record<string, string>) {
  const child = spawn(process.execPath, connectorEntry("--role", "worker"), {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      REDIS_URL: service("redisUrl"),
      REDIS_PREFIX: `t-${randomUUID()}`,
      PROVIDER_BASE_URL: "http://127.0.0.1:9/v1",
      PROVIDER_AUTH_URL: "http://127.0.0.1:9",
      PROVIDER_AUDIENCE: "none",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
    if (out.includes("sync worker running")) child.kill("SIGTERM");
  });
  child.stderr.on("data", (c: Buffer) => {
    out += c.toString();
  });
  return new Promise<{ code: number | null; out: string }>((done) =>
    child.on("exit", (code) => done({ code, out })),
  );
}

describe("a changed ENCRYPTION_KEY", () => {
  it("stops the process at start-up with one line that names the variable and the fix", async () => {
    const path = await storeWithOldSecrets();
    const { code, out } = await startMain({ DATABASE_PATH: path, ENCRYPTION_KEY: NEW_KEY });
    expect(code).toBe(2);
    expect(out.trim()).toBe(
      "ENCRYPTION_KEY cannot open the secrets already stored (a.myshopify.com's provider client secret): set the key they were sealed with, or keep it as ENCRYPTION_KEY_PREVIOUS beside the new key and run `connector secrets rotate`",
    );
  });

  it("is rotated in with ENCRYPTION_KEY_PREVIOUS and `connector secrets rotate`, after which the old key can go", async () => {
    const path = await storeWithOldSecrets();
    const redisPrefix = `t-${randomUUID()}`;
    const env = {
      DATABASE_PATH: path,
      REDIS_URL: service("redisUrl"),
      REDIS_PREFIX: redisPrefix,
      ENCRYPTION_KEY: NEW_KEY,
      ENCRYPTION_KEY_PREVIOUS: OLD_KEY,
    };
    // While both keys are set, the processes start and open everything.
    const during = await startMain(env);
    expect(during.out).toContain("sync worker running");

    const rotated = await cli(["secrets", "rotate", "--json"], env);
    expect(rotated.stderr).toBe("");
    expect(rotated.code).toBe(0);
    const report = JSON.parse(rotated.stdout);
    expect(report).toMatchObject({ resealed: 5, alreadyCurrent: 0, unreadable: [] });

    const db = openDatabase(path);
    const fresh = createSecretBox(NEW_KEY);
    const shops = new ShopRepository(db);
    const a = await shops.getShop("a.myshopify.com");
    expect(fresh.isCurrent(a?.providerClientSecretSealed ?? "")).toBe(true);
    expect(
      fresh.open(a?.accessTokenSealed ?? "", sealedFor.shopifyAccessToken("a.myshopify.com")),
    ).toBe("shpat_a");
    expect(
      fresh.open(
        (await shops.getShop("b.myshopify.com"))?.providerClientSecretSealed ?? "",
        sealedFor.providerClientSecret("b.myshopify.com"),
      ),
    ).toBe("secret-b");
    // The provider's webhook secret (per account) is re-sealed with the shops' secrets.
    const webhookSealed =
      (await new ProviderWebhookSecretRepository(db).get(WEBHOOK_ACCOUNT)) ?? "";
    expect(fresh.isCurrent(webhookSealed)).toBe(true);
    expect(
      fresh.open(
        webhookSealed,
        sealedFor.providerWebhookSecret(WEBHOOK_ACCOUNT.providerBaseUrl, WEBHOOK_ACCOUNT.clientId),
      ),
    ).toBe("whsec-account-b");
    await db.close();

    // Without the previous key now: nothing left that only it opens.
    const { ENCRYPTION_KEY_PREVIOUS: _gone, ...after } = env;
    expect((await startMain(after)).out).toContain("sync worker running");
    const again = await cli(["secrets", "rotate", "--json"], after);
    expect(JSON.parse(again.stdout)).toMatchObject({ resealed: 0, alreadyCurrent: 5 });
    expect(
      fresh.open(
        (await new ShopRepository(openDatabase(path)).getShop("a.myshopify.com"))
          ?.refreshTokenSealed ?? "",
        sealedFor.shopifyRefreshToken("a.myshopify.com"),
      ),
    ).toBe("shprt_a");
  });
});
