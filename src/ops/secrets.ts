import { eq } from "drizzle-orm";
import { deleteKeys, type RedisConnection, scanKeys } from "../lib/redis-keys.ts";
import { type SecretBox, sealedFor } from "../lib/secret-box.ts";
import type { SealedSessionStorage } from "../shopify/install/session-storage.ts";
import type { Db, ProviderWebhookSecretRepository, ShopRepository } from "../store/index.ts";

/** One sealed value stored with a shop: its column, its owner and how to write it back. */
interface ShopSecret {
  shop: string;
  what: string;
  sealed: string;
  context: string;
  write(resealed: string): Promise<unknown>;
}

async function shopSecrets(shops: ShopRepository): Promise<ShopSecret[]> {
  return (await shops.listShops()).flatMap((shop): ShopSecret[] => [
    ...(shop.providerClientSecretSealed
      ? [
          {
            shop: shop.shop,
            what: "provider client secret",
            sealed: shop.providerClientSecretSealed,
            context: sealedFor.providerClientSecret(shop.shop),
            write: (v: string) =>
              shops.updateSettings(shop.shop, { providerClientSecretSealed: v }),
          },
        ]
      : []),
    ...(shop.accessTokenSealed
      ? [
          {
            shop: shop.shop,
            what: "Shopify access token",
            sealed: shop.accessTokenSealed,
            context: sealedFor.shopifyAccessToken(shop.shop),
            write: (v: string) => shops.updateSettings(shop.shop, { accessTokenSealed: v }),
          },
        ]
      : []),
    ...(shop.refreshTokenSealed
      ? [
          {
            shop: shop.shop,
            what: "Shopify refresh token",
            sealed: shop.refreshTokenSealed,
            context: sealedFor.shopifyRefreshToken(shop.shop),
            write: (v: string) => shops.updateSettings(shop.shop, { refreshTokenSealed: v }),
          },
        ]
      : []),
  ]);
}

/** The provider's webhook secrets, one per provider account (shared by the account's shops). */
async function accountSecrets(
  webhookSecrets: ProviderWebhookSecretRepository,
): Promise<ShopSecret[]> {
  return (await webhookSecrets.list()).map((row) => ({
    shop: `provider account ${row.clientId} (${row.providerBaseUrl})`,
    what: "provider webhook secret",
    sealed: row.sealed,
    context: sealedFor.providerWebhookSecret(row.providerBaseUrl, row.clientId),
    write: (v: string) => webhookSecrets.set(row, v),
  }));
}

/**
 * Whether ENCRYPTION_KEY (with ENCRYPTION_KEY_PREVIOUS) opens the secrets already stored:
 * checked on one of them at start-up, so a changed key stops the process with the fix instead
 * of every sync retrying for minutes on a value it cannot open. Null when it does, or when
 * nothing is stored yet.
 */
export async function sealedSecretsProblem(
  shops: ShopRepository,
  secrets: SecretBox,
): Promise<string | null> {
  const [first] = await shopSecrets(shops);
  if (!first) return null;
  try {
    secrets.open(first.sealed, first.context);
    return null;
  } catch {
    return `ENCRYPTION_KEY cannot open the secrets already stored (${first.shop}'s ${first.what}): set the key they were sealed with, or keep it as ENCRYPTION_KEY_PREVIOUS beside the new key and run \`connector secrets rotate\``;
  }
}

export interface RotationReport {
  /** The key everything is now sealed with (ENCRYPTION_KEY's id). */
  keyId: string;
  resealed: number;
  alreadyCurrent: number;
  sessionsResealed: number;
  /** Values no configured key opens: named, left as they are. */
  unreadable: { shop: string; what: string }[];
  providerTokensDropped: number;
}

/**
 * `connector secrets rotate`: re-seals every stored secret (shop secrets, the provider's webhook
 * secrets, Shopify sessions) that an older key (or the first format) sealed under ENCRYPTION_KEY, one value at a time, so the processes keep running
 * throughout (each opens both keys while ENCRYPTION_KEY_PREVIOUS is set). Cached provider
 * tokens are dropped instead: they are requested again on the next call.
 */
export async function rotateSecrets(deps: {
  shops: ShopRepository;
  webhookSecrets: ProviderWebhookSecretRepository;
  sessions: SealedSessionStorage;
  db: Db;
  redis: RedisConnection;
  prefix: string;
  secrets: SecretBox;
}): Promise<RotationReport> {
  const { secrets } = deps;
  const report: RotationReport = {
    keyId: secrets.keyId,
    resealed: 0,
    alreadyCurrent: 0,
    sessionsResealed: 0,
    unreadable: [],
    providerTokensDropped: 0,
  };
  const stored = [
    ...(await shopSecrets(deps.shops)),
    ...(await accountSecrets(deps.webhookSecrets)),
  ];
  for (const secret of stored) {
    if (secrets.isCurrent(secret.sealed)) {
      report.alreadyCurrent++;
      continue;
    }
    try {
      await secret.write(secrets.seal(secrets.open(secret.sealed, secret.context), secret.context));
      report.resealed++;
    } catch {
      report.unreadable.push({ shop: secret.shop, what: secret.what });
    }
  }
  // Sessions: loading opens them with either key; storing seals them with the current one.
  const { session: sessions } = deps.db.t;
  const rows = await deps.db.orm
    .select({ id: sessions.id, accessToken: sessions.accessToken })
    .from(sessions);
  for (const row of rows) {
    if (secrets.isCurrent(row.accessToken)) continue;
    try {
      const session = await deps.sessions.loadSession(row.id);
      if (session) {
        await deps.sessions.storeSession(session);
        report.sessionsResealed++;
      }
    } catch {
      const [shop] = await deps.db.orm
        .select({ shop: sessions.shop })
        .from(sessions)
        .where(eq(sessions.id, row.id));
      report.unreadable.push({ shop: shop?.shop ?? row.id, what: "Shopify session" });
    }
  }
  for await (const keys of scanKeys(deps.redis, `${deps.prefix}:token:*`, 200)) {
    // The cached tokens only (named by a hash of client and audience), not their locks or counters.
    const tokens = keys.filter((k) => /:token:[0-9a-f]{24}$/.test(k));
    report.providerTokensDropped += await deleteKeys(deps.redis, tokens);
  }
  return report;
}
