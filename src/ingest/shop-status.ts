import type { ShopRepository } from "../store/index.ts";

/**
 * Shop status for the receiver, cached for a few seconds: a flash sale sends thousands of
 * webhooks per shop, and the status changes rarely. The worker reads the database itself, so an
 * uninstall still stops the sync at once.
 */
export function cachedShopStatus(ctx: { shops: ShopRepository }, ttlMs = 5_000) {
  const cache = new Map<
    string,
    { status: "active" | "paused" | "uninstalled" | "unknown"; until: number }
  >();
  return {
    forget(shop: string) {
      cache.delete(shop);
    },
    async shopStatus(shop: string) {
      const now = Date.now();
      const hit = cache.get(shop);
      if (hit && hit.until > now) return hit.status;
      const status = (await ctx.shops.getShop(shop))?.status ?? "unknown";
      cache.set(shop, { status, until: now + ttlMs });
      return status;
    },
  };
}
