import { and, eq, isNull } from "drizzle-orm";
import { deleteKeys, type RedisConnection, scanKeys } from "../lib/redis-keys.ts";
import { type SecretBox, sealedFor } from "../lib/secret-box.ts";
import type { Db, ProviderWebhookSecretRepository, ShopRepository } from "../store/index.ts";

/** One sealed value stored with a shop: its column, its owner and how to read and replace it. */
interface ShopSecret {
  shop: string;
  what: string;
  sealed: string;
  context: string;
  /** The value stored now, or null when it is gone. */
  read(): Promise<string | null>;
  /** Writes `to` only while `from` is stored; whether it did. */
  replace(from: string, to: string): Promise<boolean>;
}

const SHOP_SECRETS = [
  ["providerClientSecretSealed", "provider client secret", sealedFor.providerClientSecret],
  ["accessTokenSealed", "Shopify access token", sealedFor.shopifyAccessToken],
  ["refreshTokenSealed", "Shopify refresh token", sealedFor.shopifyRefreshToken],
] as const;

async function shopSecrets(shops: ShopRepository): Promise<ShopSecret[]> {
  return (await shops.listShops()).flatMap((shop) =>
    SHOP_SECRETS.flatMap(([field, what, context]): ShopSecret[] => {
      const sealed = shop[field];
      if (!sealed) return [];
      return [
        {
          shop: shop.shop,
          what,
          sealed,
          context: context(shop.shop),
          read: async () => (await shops.getShop(shop.shop))?.[field] ?? null,
          replace: (from, to) => shops.replaceSealed(shop.shop, field, from, to),
        },
      ];
    }),
  );
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
    read: () => webhookSecrets.get(row),
    replace: (from, to) => webhookSecrets.replace(row, from, to),
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
  /** Values written again each time they were re-sealed (another process busy on them). */
  changing: { shop: string; what: string }[];
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
    changing: [],
    providerTokensDropped: 0,
  };
  const stored = [
    ...(await shopSecrets(deps.shops)),
    ...(await accountSecrets(deps.webhookSecrets)),
  ];
  for (const secret of stored) {
    const outcome = await reseal(secret.sealed, {
      reseal: (sealed) => secrets.seal(secrets.open(sealed, secret.context), secret.context),
      read: secret.read,
      replace: secret.replace,
      isCurrent: (sealed) => secrets.isCurrent(sealed),
    });
    if (outcome === "resealed") report.resealed++;
    else if (outcome === "current") report.alreadyCurrent++;
    else if (outcome !== "gone") report[outcome].push({ shop: secret.shop, what: secret.what });
  }
  // Sessions: both tokens re-sealed in one write, on the row as it was read.
  const { session: sessions } = deps.db.t;
  const rows = await deps.db.orm
    .select({
      id: sessions.id,
      shop: sessions.shop,
      accessToken: sessions.accessToken,
      refreshToken: sessions.refreshToken,
    })
    .from(sessions);
  type Tokens = { accessToken: string; refreshToken: string | null };
  for (const row of rows) {
    const sealedOr = (name: keyof Tokens, sealed: string | null) =>
      sealed === null || secrets.isCurrent(sealed)
        ? sealed
        : secrets.seal(
            secrets.open(sealed, sealedFor.session(name, row.id)),
            sealedFor.session(name, row.id),
          );
    const outcome = await reseal<Tokens>(row, {
      isCurrent: (t) =>
        secrets.isCurrent(t.accessToken) &&
        (t.refreshToken === null || secrets.isCurrent(t.refreshToken)),
      reseal: (t) => ({
        accessToken: sealedOr("accessToken", t.accessToken) as string,
        refreshToken: sealedOr("refreshToken", t.refreshToken),
      }),
      read: async () => {
        const [now] = await deps.db.orm
          .select({ accessToken: sessions.accessToken, refreshToken: sessions.refreshToken })
          .from(sessions)
          .where(eq(sessions.id, row.id));
        return now ?? null;
      },
      replace: async (from, to) => {
        const written = await deps.db.orm
          .update(sessions)
          .set(to)
          .where(
            and(
              eq(sessions.id, row.id),
              eq(sessions.accessToken, from.accessToken),
              from.refreshToken === null
                ? isNull(sessions.refreshToken)
                : eq(sessions.refreshToken, from.refreshToken),
            ),
          )
          .returning({ id: sessions.id });
        return written.length > 0;
      },
    });
    if (outcome === "resealed") report.sessionsResealed++;
    else if (outcome === "unreadable" || outcome === "changing") {
      report[outcome].push({ shop: row.shop, what: "Shopify session" });
    }
  }
  for await (const keys of scanKeys(deps.redis, `${deps.prefix}:token:*`, 200)) {
    // The cached tokens only (named by a hash of client and audience), not their locks or counters.
    const tokens = keys.filter((k) => /:token:[0-9a-f]{24}$/.test(k));
    report.providerTokensDropped += await deleteKeys(deps.redis, tokens);
  }
  return report;
}

/** How many times a value written again during its re-seal is read and re-sealed again. */
const RESEAL_TRIES = 5;

/**
 * Re-seals one stored value under the current key, written only over the value it was made from
 * (`replace`): a value written meanwhile (a refreshed token, new credentials) is read again and,
 * if an older key sealed it (a process not restarted with the new key yet), re-sealed in turn.
 */
async function reseal<T>(
  first: T,
  value: {
    isCurrent(sealed: T): boolean;
    reseal(sealed: T): T;
    read(): Promise<T | null>;
    replace(from: T, to: T): Promise<boolean>;
  },
): Promise<"resealed" | "current" | "gone" | "unreadable" | "changing"> {
  let sealed: T | null = first;
  for (let tries = 0; tries < RESEAL_TRIES; tries++) {
    if (sealed === null) return "gone";
    if (value.isCurrent(sealed)) return "current";
    let next: T;
    try {
      next = value.reseal(sealed);
    } catch {
      return "unreadable";
    }
    if (await value.replace(sealed, next)) return "resealed";
    sealed = await value.read();
  }
  return "changing";
}
