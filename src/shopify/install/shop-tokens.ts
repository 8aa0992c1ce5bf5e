import { randomUUID } from "node:crypto";
import { HttpResponseError, type Session } from "@shopify/shopify-api";
import type { Logger } from "pino";
import { releaseLock, withLock } from "../../lib/lock.ts";
import type { RedisConnection } from "../../lib/redis-keys.ts";
import { type SecretBox, sealedFor } from "../../lib/secret-box.ts";
import type { ShopRecord, ShopRepository, ShopSettingsInput } from "../../store/index.ts";
import type { Shopify } from "../api.ts";

/**
 * Why a shop whose Shopify token no longer works is paused (`status`, `shops list`, the dead
 * letters it causes): the merchant opens the app from the Shopify admin, which hands the app
 * a new token. A reinstall is not needed (an uninstall would drop the shop's queued work).
 */
export const RECONNECT_NEEDED =
  "reconnect needed: Shopify no longer accepts the app's token for this shop; open the app from the Shopify admin to sign in again";

/** The same pause as earlier versions wrote it, still stored on their shops' rows. */
export const EARLIER_RECONNECT_NEEDED =
  "reinstall needed: Shopify refused the app's refresh token; open the app from the Shopify admin to install it again";

/** Whether the shop waits for the merchant to open the app again (either wording). */
export function needsReconnect(reason: string | null | undefined): boolean {
  return reason === RECONNECT_NEEDED || reason === EARLIER_RECONNECT_NEEDED;
}

/** Shopify's answer to exchanging a non-expiring offline token: the expiring pair, or a refusal. */
export type TokenExchange =
  | { ok: true; session: Session }
  | {
      ok: false;
      /** 400 or 401. */
      status: number;
      /** Shopify's error code (`invalid_subject_token`, `invalid_client`…), when it gave one. */
      error: string | null;
    };

/** Refresh this long before expiry at most, or at half a token's life when that is shorter. */
const REFRESH_MARGIN_MS = 5 * 60_000;
/** How long one process may hold a shop's refresh (Shopify answers in well under a second). */
const LOCK_MS = 15_000;

/** The sealed columns and times that store a session's tokens on the shop's row. */
export function tokenColumns(
  session: Session,
  secrets: SecretBox,
  now = Date.now(),
): ShopSettingsInput {
  if (!session.accessToken) throw new Error("the session carries no access token");
  const expires = session.expires?.getTime();
  const refreshAt =
    expires === undefined ? null : expires - Math.min(REFRESH_MARGIN_MS, (expires - now) / 2);
  return {
    accessTokenSealed: secrets.seal(
      session.accessToken,
      sealedFor.shopifyAccessToken(session.shop),
    ),
    accessTokenExpiresAt: expires === undefined ? null : new Date(expires).toISOString(),
    accessTokenRefreshAt: refreshAt === null ? null : new Date(refreshAt).toISOString(),
    refreshTokenSealed: session.refreshToken
      ? secrets.seal(session.refreshToken, sealedFor.shopifyRefreshToken(session.shop))
      : null,
    refreshTokenExpiresAt: session.refreshTokenExpires
      ? session.refreshTokenExpires.toISOString()
      : null,
  };
}

/**
 * A shop's Admin API access token, kept working: an expiring offline token is refreshed before
 * its end (five minutes, or half its life when that is shorter) and once after a 401. One
 * refresh per shop is in flight across every process (a Redis lock); the others wait for its
 * result. The new pair is stored before it is used, and Shopify keeps the refresh token used
 * valid until the new one is, so a refresh whose answer is lost is simply tried again. A refresh
 * token Shopify refuses pauses the shop with RECONNECT_NEEDED instead of retrying forever.
 */
export interface ShopTokensDeps {
  shopify: Shopify;
  shops: ShopRepository;
  secrets: SecretBox;
  redis: RedisConnection;
  prefix: string;
  logger: Logger;
  /** Told each refresh's outcome (the token refresh counter). */
  onRefresh?: (outcome: "ok" | "refused" | "failed") => void;
  /** How long one process may hold a shop's refresh (default 15 s; tests shorten it). */
  lockMs?: number;
}

export class ShopTokens {
  readonly #d: ShopTokensDeps;

  constructor(deps: ShopTokensDeps) {
    this.#d = deps;
  }

  #open(shop: ShopRecord): string | null {
    return shop.accessTokenSealed
      ? this.#d.secrets.open(shop.accessTokenSealed, sealedFor.shopifyAccessToken(shop.shop))
      : null;
  }

  /** The token to use now: refreshed first when its refresh time has come. */
  async current(shopDomain: string): Promise<string | null> {
    const shop = await this.#d.shops.getShop(shopDomain);
    // Refused once: no call goes to Shopify until the merchant reopens the app.
    if (!shop || needsReconnect(shop.pausedReason)) return null;
    const due = shop.accessTokenRefreshAt && Date.parse(shop.accessTokenRefreshAt) <= Date.now();
    if (due && shop.refreshTokenSealed) return this.refresh(shopDomain, this.#open(shop));
    return this.#open(shop);
  }

  /**
   * Refreshes the shop's token (migrates a non-expiring one), unless another process already
   * replaced `stale` with a token that is not due. Answers the token to use, or null when
   * Shopify refused (the shop is then paused with RECONNECT_NEEDED).
   */
  async refresh(
    shopDomain: string,
    stale: string | null,
    migrationAttempts = 3,
  ): Promise<string | null> {
    const lock = this.#lockKey(shopDomain);
    const owner = randomUUID();
    const lockMs = this.#d.lockMs ?? LOCK_MS;
    const deadline = Date.now() + lockMs * 2;
    while (Date.now() < deadline) {
      const shop = await this.#d.shops.getShop(shopDomain);
      if (!shop || shop.status === "uninstalled") return null;
      // Refused once: only a reinstall brings a new pair; asking again would be a silent loop.
      if (needsReconnect(shop.pausedReason)) return null;
      const token = this.#open(shop);
      const due = shop.accessTokenRefreshAt && Date.parse(shop.accessTokenRefreshAt) <= Date.now();
      if (token !== stale && !due) return token;
      if (!shop.refreshTokenSealed) {
        if (!shop.accessTokenSealed) return null;
        if ((await this.#d.redis.set(lock, owner, "PX", lockMs, "NX")) === "OK") {
          try {
            return await this.#migrateNow(shop, migrationAttempts);
          } finally {
            await releaseLock(this.#d.redis, lock, owner);
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      // Its 90 days are over (the shop was idle): Shopify would refuse it; no need to ask.
      if (shop.refreshTokenExpiresAt && Date.parse(shop.refreshTokenExpiresAt) <= Date.now()) {
        await this.#refused(shop.shop, "the refresh token's 90 days are over");
        return null;
      }
      if ((await this.#d.redis.set(lock, owner, "PX", lockMs, "NX")) === "OK") {
        try {
          return await this.#refreshNow(shop);
        } finally {
          await releaseLock(this.#d.redis, lock, owner);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for another process to refresh ${shopDomain}'s token`);
  }

  /**
   * Exchanges a shop's non-expiring offline token for an expiring one (Shopify refuses
   * non-expiring tokens from 2027-01-01), under the shop's refresh lock. Answers whether the
   * shop now holds an expiring token.
   */
  async migrate(shopDomain: string, attempts = 3): Promise<boolean> {
    const shop = await this.#d.shops.getShop(shopDomain);
    if (!shop?.accessTokenSealed || shop.status === "uninstalled") return false;
    if (shop.refreshTokenSealed) return true;
    return (await this.refresh(shopDomain, this.#open(shop), attempts)) !== null;
  }

  /**
   * The migration of a stored shop: the exchange, the pair stored before it is used, or the
   * shop paused when Shopify refuses.
   */
  async #migrateNow(shop: ShopRecord, attempts: number): Promise<string | null> {
    const log = this.#d.logger.child({ shop: shop.shop });
    const answer = await this.#exchange(shop.shop, this.#open(shop) as string, attempts);
    if (!answer.ok) {
      await this.#d.shops.setStatus(shop.shop, "paused", RECONNECT_NEEDED);
      log.warn(
        { status: answer.status },
        "Shopify refused the token migration: shop paused until the merchant opens the app from the Shopify admin",
      );
      return null;
    }
    await this.#d.shops.updateSettings(shop.shop, tokenColumns(answer.session, this.#d.secrets));
    log.info("non-expiring Shopify token migrated to an expiring one");
    return answer.session.accessToken ?? null;
  }

  /**
   * The exchange itself. Once Shopify has answered, the original token no longer works for the
   * Admin API, so a lost answer is retried with it (Shopify answers the same pair for 7 days):
   * here a few times, then thrown (the caller tries again later). A refusal (400, 401) is
   * answered, with Shopify's error code when it gave one.
   */
  async #exchange(shop: string, token: string, attempts: number): Promise<TokenExchange> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { session } = await this.#d.shopify.auth.migrateToExpiringToken({
          shop,
          nonExpiringOfflineAccessToken: token,
        });
        return { ok: true, session };
      } catch (error) {
        const status = error instanceof HttpResponseError ? error.response.code : undefined;
        if (error instanceof HttpResponseError && (status === 400 || status === 401)) {
          const code = error.response.body?.error;
          return {
            ok: false,
            status,
            error: typeof code === "string" && /^[a-z_]{1,64}$/.test(code) ? code : null,
          };
        }
        if (attempt >= attempts) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
      }
    }
  }

  /**
   * A non-expiring offline token an operator gives for a shop (`shops add --access-token`),
   * exchanged for an expiring pair as the migration does, under the shop's refresh lock: `save`
   * gets the pair's sealed columns while the lock is held (no refresh or migration of the
   * shop's previous token in another process writes over it). Refused: nothing is saved and the
   * refusal is answered; no answer: thrown, nothing saved (a retry with the same token within
   * 7 days gets the same pair). The token given is never stored.
   */
  async adopt<T>(
    shopDomain: string,
    token: string,
    save: (columns: ShopSettingsInput, session: Session) => Promise<T>,
    attempts = 3,
  ): Promise<{ ok: true; saved: T } | Extract<TokenExchange, { ok: false }>> {
    const lockMs = this.#d.lockMs ?? LOCK_MS;
    return withLock(
      this.#d.redis,
      this.#lockKey(shopDomain),
      {
        ttlMs: lockMs,
        waitMs: lockMs * 2,
        busy: () =>
          new Error(`timed out waiting for another process to refresh ${shopDomain}'s token`),
      },
      async () => {
        const answer = await this.#exchange(shopDomain, token, attempts);
        if (!answer.ok) return answer;
        const saved = await save(tokenColumns(answer.session, this.#d.secrets), answer.session);
        this.#d.logger
          .child({ shop: shopDomain })
          .info("the Shopify token given was exchanged for an expiring one");
        return { ok: true as const, saved };
      },
    );
  }

  /** The shop's refresh lock: one refresh, migration or exchange of its token at a time. */
  #lockKey(shopDomain: string): string {
    return `${this.#d.prefix}:shopify-refresh:${shopDomain}`;
  }

  /** Every installed shop still on a non-expiring token, migrated one by one. */
  async migrateAll(): Promise<
    { shop: string; result: "migrated" | "refused" | "failed"; reason?: string }[]
  > {
    const results: { shop: string; result: "migrated" | "refused" | "failed"; reason?: string }[] =
      [];
    for (const shop of await this.#d.shops.listShops()) {
      if (!shop.accessTokenSealed || shop.refreshTokenSealed || shop.status === "uninstalled")
        continue;
      try {
        results.push({
          shop: shop.shop,
          result: (await this.migrate(shop.shop)) ? "migrated" : "refused",
        });
      } catch (error) {
        results.push({ shop: shop.shop, result: "failed", reason: (error as Error).message });
      }
    }
    return results;
  }

  /** The refresh token is no longer accepted: the shop waits for the merchant (one line). */
  async #refused(shop: string, why: string) {
    this.#d.onRefresh?.("refused");
    await this.#d.shops.setStatus(shop, "paused", RECONNECT_NEEDED);
    this.#d.logger.warn(
      { shop, why },
      "Shopify no longer accepts the shop's refresh token: shop paused until the merchant opens the app from the Shopify admin",
    );
  }

  async #refreshNow(shop: ShopRecord): Promise<string | null> {
    const refreshToken = this.#d.secrets.open(
      shop.refreshTokenSealed as string,
      sealedFor.shopifyRefreshToken(shop.shop),
    );
    const log = this.#d.logger.child({ shop: shop.shop });
    try {
      const { session } = await this.#d.shopify.auth.refreshToken({
        shop: shop.shop,
        refreshToken,
      });
      // An answer slower than the lock: another process has refreshed meanwhile and stored a
      // newer pair. Writing this one over it would keep a refresh token Shopify may already
      // have replaced; theirs is kept, and used.
      const latest = await this.#d.shops.getShop(shop.shop);
      if (latest && latest.refreshTokenSealed !== shop.refreshTokenSealed) {
        log.warn("a refresh answered after another process stored a newer token; keeping that one");
        this.#d.onRefresh?.("ok");
        return this.#open(latest);
      }
      // Stored before anything uses it: a crash after this line loses nothing.
      await this.#d.shops.updateSettings(shop.shop, tokenColumns(session, this.#d.secrets));
      log.info(
        { expiresAt: session.expires?.toISOString() ?? null },
        "Shopify access token refreshed",
      );
      this.#d.onRefresh?.("ok");
      return session.accessToken ?? null;
    } catch (error) {
      // 400/401 from the token endpoint: the refresh token is no longer accepted.
      const status = error instanceof HttpResponseError ? error.response.code : undefined;
      if (status === 400 || status === 401) {
        await this.#refused(shop.shop, `Shopify answered ${status}`);
        return null;
      }
      // A lost or failed answer: the refresh token used stays valid, the next call tries again.
      this.#d.onRefresh?.("failed");
      throw error;
    }
  }
}
