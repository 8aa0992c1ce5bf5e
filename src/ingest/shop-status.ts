import type { ShopRepository } from "../store/index.ts";

/**
 * Shop status for the receiver, cached for a few seconds: a flash sale sends thousands of
 * webhooks per shop, and the status changes rarely. The worker reads the database itself, so an
 * uninstall still stops the sync at once. While the database cannot be read, the status last
 * read stands.
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
      let status: "active" | "paused" | "uninstalled" | "unknown";
      try {
        status = (await ctx.shops.getShop(shop))?.status ?? "unknown";
      } catch (error) {
        // The database is away (a Postgres restart, a failover): the status last read stands,
        // as nothing changes it meanwhile (every change is a write to that database, and the
        // web's own changes `forget` it), so the shop's webhooks are still queued from Redis.
        // A shop not read yet is answered 503, and Shopify sends its webhook again.
        if (hit) return hit.status;
        throw error;
      }
      cache.set(shop, { status, until: now + ttlMs });
      return status;
    },
  };
}
