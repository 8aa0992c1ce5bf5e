import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Session } from "@shopify/shopify-api";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { createSecretBox, type SecretBox, sealedFor } from "../../src/lib/secret-box.ts";
import { rotateSecrets } from "../../src/ops/index.ts";
import { SealedSessionStorage } from "../../src/shopify/install/session-storage.ts";
import {
  type Db,
  openDatabase,
  ProviderWebhookSecretRepository,
  ShopRepository,
} from "../../src/store/index.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { service } from "../helpers/services.ts";

/**
 * `connector secrets rotate` while the processes keep running (each opens both keys): a value
 * written between the rotation's read and its write (a refreshed Shopify token, credentials the
 * merchant changed on the settings page, a new session) is newer than the one the rotation
 * re-seals, and must not be overwritten by it.
 */
const OLD_KEY = Buffer.alloc(32, 21).toString("base64");
const NEW_KEY = Buffer.alloc(32, 42).toString("base64");
const SHOP = "rotating.myshopify.com";
const SESSION_ID = `offline_${SHOP}`;
const old = createSecretBox(OLD_KEY);
const both = createSecretBox(NEW_KEY, [OLD_KEY]);
const fresh = createSecretBox(NEW_KEY);

const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const ENGINES = {
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), "rotation-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    return openDatabase(join(dir, "connector.sqlite"));
  },
  postgres: async () => openDatabase(await createTestDatabase(service("postgresUrl"))),
};

async function storeSealedWithOldKey(engine: keyof typeof ENGINES = "sqlite") {
  const db = await ENGINES[engine]();
  closers.push(() => db.close());
  await db.ready();
  const shops = new ShopRepository(db);
  await shops.upsertShop(SHOP, {
    providerClientSecretSealed: old.seal("secret-old", sealedFor.providerClientSecret(SHOP)),
    accessTokenSealed: old.seal("shpat_old", sealedFor.shopifyAccessToken(SHOP)),
  });
  await new SealedSessionStorage(db, old).storeSession(
    new Session({
      id: SESSION_ID,
      shop: SHOP,
      state: "s",
      isOnline: false,
      accessToken: "shpat_session_old",
      refreshToken: "shprt_session_old",
    }),
  );
  const redis = new Redis(service("redisUrl"));
  closers.push(() => redis.quit());
  return { db, shops, redis };
}

/** A key-holding box that, the first time it seals for `context`, lets `meanwhile` write first. */
function writingMeanwhile(context: string, meanwhile: () => void): SecretBox {
  let done = false;
  return {
    keyId: both.keyId,
    open: (sealed, ctx) => both.open(sealed, ctx),
    isCurrent: (sealed) => both.isCurrent(sealed),
    seal(plain, ctx) {
      if (ctx === context && !done) {
        done = true;
        meanwhile();
      }
      return both.seal(plain, ctx);
    },
  };
}

/** A synchronous write on the SQLite file, as another process's would land. */
const sqlOn = (db: Db, sql: string, ...params: unknown[]) => {
  if (db.dialect !== "sqlite") throw new Error("SQLite only");
  db.sqlite.$client.prepare(sql).run(...params);
};

const rotate = (db: Db, shops: ShopRepository, redis: Redis, secrets: SecretBox) =>
  rotateSecrets({
    shops,
    webhookSecrets: new ProviderWebhookSecretRepository(db),
    db,
    redis,
    prefix: `t-${randomUUID()}`,
    secrets,
  });

describe("secrets rotate", () => {
  it.each(Object.keys(ENGINES) as (keyof typeof ENGINES)[])(
    "re-seals the shop's secrets and its Shopify session on %s: they open with the new key alone",
    async (engine) => {
      const { db, shops, redis } = await storeSealedWithOldKey(engine);
      const report = await rotate(db, shops, redis, both);
      expect(report).toMatchObject({
        resealed: 2,
        sessionsResealed: 1,
        unreadable: [],
        changing: [],
      });
      const session = await new SealedSessionStorage(db, fresh).loadSession(SESSION_ID);
      expect(session?.accessToken).toBe("shpat_session_old");
      expect(session?.refreshToken).toBe("shprt_session_old");
      const shop = await shops.getShop(SHOP);
      expect(
        fresh.open(shop?.providerClientSecretSealed ?? "", sealedFor.providerClientSecret(SHOP)),
      ).toBe("secret-old");
      expect(fresh.open(shop?.accessTokenSealed ?? "", sealedFor.shopifyAccessToken(SHOP))).toBe(
        "shpat_old",
      );
      // Done: a second rotation finds everything current.
      expect(await rotate(db, shops, redis, both)).toMatchObject({
        resealed: 0,
        alreadyCurrent: 2,
        sessionsResealed: 0,
      });
    },
  );

  it("keeps a secret written while it was re-sealed, by a process on the new key", async () => {
    const { db, shops, redis } = await storeSealedWithOldKey();
    const context = sealedFor.providerClientSecret(SHOP);
    const secrets = writingMeanwhile(context, () =>
      sqlOn(
        db,
        "UPDATE shops SET provider_client_secret_sealed = ? WHERE shop = ?",
        both.seal("secret-changed", context),
        SHOP,
      ),
    );
    const report = await rotate(db, shops, redis, secrets);
    expect(report).toMatchObject({ resealed: 1, alreadyCurrent: 1, changing: [] });
    const stored = (await shops.getShop(SHOP))?.providerClientSecretSealed ?? "";
    expect(fresh.open(stored, context)).toBe("secret-changed");
  });

  it("re-seals a secret written while it was re-sealed, by a process still on the old key", async () => {
    const { db, shops, redis } = await storeSealedWithOldKey();
    const context = sealedFor.shopifyAccessToken(SHOP);
    const secrets = writingMeanwhile(context, () =>
      sqlOn(
        db,
        "UPDATE shops SET access_token_sealed = ? WHERE shop = ?",
        old.seal("shpat_refreshed", context),
        SHOP,
      ),
    );
    const report = await rotate(db, shops, redis, secrets);
    expect(report).toMatchObject({ resealed: 2, unreadable: [], changing: [] });
    const stored = (await shops.getShop(SHOP))?.accessTokenSealed ?? "";
    expect(fresh.open(stored, context)).toBe("shpat_refreshed");
  });

  it("keeps a session stored again while it was re-sealed", async () => {
    const { db, shops, redis } = await storeSealedWithOldKey();
    const context = sealedFor.session("accessToken", SESSION_ID);
    const secrets = writingMeanwhile(context, () =>
      sqlOn(
        db,
        'UPDATE session SET "accessToken" = ?, "refreshToken" = ? WHERE id = ?',
        both.seal("shpat_session_new", context),
        both.seal("shprt_session_new", sealedFor.session("refreshToken", SESSION_ID)),
        SESSION_ID,
      ),
    );
    await rotate(db, shops, redis, secrets);
    const session = await new SealedSessionStorage(db, fresh).loadSession(SESSION_ID);
    expect(session?.accessToken).toBe("shpat_session_new");
    expect(session?.refreshToken).toBe("shprt_session_new");
  });
});
