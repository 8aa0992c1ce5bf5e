import { hkdfSync } from "node:crypto";
import type { Context } from "hono";
import { deleteCookie, getSignedCookie, setSignedCookie } from "hono/cookie";
import type { ShopRecord, ShopRepository } from "../../store/index.ts";
import { ShopDomain } from "../../sync/source-order.ts";

const COOKIE = "connector_shop";
/** A merchant comes back through Shopify (the install link) after this; it re-signs the cookie. */
const MAX_AGE_SECONDS = 8 * 3600;

/**
 * The settings page's session: a signed, http-only cookie naming one shop, set by the OAuth
 * callback. It carries the shop, the installation it was issued for (the shop's installedAt: an
 * uninstall or a reinstall ends every cookie issued before) and an expiry, signed (HMAC-SHA256, Hono's signed cookies) with
 * a key derived from ENCRYPTION_KEY, so it cannot be forged or pointed at another shop. Every
 * settings route reads the shop from here and nowhere else: no query or form field can choose
 * another shop's settings.
 */
export class ShopSessionCookie {
  readonly #key: Buffer;
  readonly #secure: boolean;

  constructor(encryptionKeyBase64: string, appUrl: string) {
    this.#key = Buffer.from(
      hkdfSync(
        "sha256",
        Buffer.from(encryptionKeyBase64, "base64"),
        Buffer.alloc(0),
        "settings-session-cookie",
        32,
      ),
    );
    this.#secure = new URL(appUrl).protocol === "https:";
  }

  async set(c: Context, shop: string, installedAt: string, now = Date.now()): Promise<void> {
    const expiresAt = now + MAX_AGE_SECONDS * 1000;
    await setSignedCookie(c, COOKIE, `${shop}|${installedAt}|${expiresAt}`, this.#key, {
      httpOnly: true,
      secure: this.#secure,
      sameSite: "Lax",
      path: "/",
      maxAge: MAX_AGE_SECONDS,
    });
  }

  /** The shop and installation of a valid, unexpired cookie, or null. */
  async read(
    c: Context,
    now = Date.now(),
  ): Promise<{ shop: ShopDomain; installedAt: string } | null> {
    const value = await getSignedCookie(c, this.#key, COOKIE);
    if (!value) return null;
    const [shop, installedAt, expires] = value.split("|");
    if (!shop || !installedAt || !expires || Number(expires) < now) return null;
    const parsed = ShopDomain.safeParse(shop);
    return parsed.success ? { shop: parsed.data, installedAt } : null;
  }

  /**
   * The shop a cookie still opens the settings of: installed, and the installation the cookie
   * was issued for (an uninstall or a reinstall ends older cookies). Null for anything else: the
   * merchant goes through Shopify again. The one rule for every route that trusts the cookie.
   */
  async currentShop(
    c: Context,
    shops: Pick<ShopRepository, "getShop">,
    now = Date.now(),
  ): Promise<ShopRecord | null> {
    const session = await this.read(c, now);
    if (!session) return null;
    const shop = await shops.getShop(session.shop);
    return shop && shop.status !== "uninstalled" && shop.installedAt === session.installedAt
      ? shop
      : null;
  }

  clear(c: Context): void {
    deleteCookie(c, COOKIE, { path: "/", secure: this.#secure });
  }
}
