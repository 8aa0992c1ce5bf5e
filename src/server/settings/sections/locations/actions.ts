import type { Hono } from "hono";
import { isShopifyId } from "../../../../shopify/payload-fields.ts";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";

/** Each Shopify location's provider fulfillment location ID, and the default one. */
export function locationsActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  app.post("/locations", async (c) => {
    const body = await c.req.parseBody();
    const map: Record<string, number> = {};
    for (const [key, value] of Object.entries(body)) {
      if (!key.startsWith("location.")) continue;
      const shopifyId = key.slice("location.".length);
      const entered = formText(value);
      if (!isShopifyId(shopifyId)) continue;
      if (entered === "") continue;
      const providerId = Number(entered);
      if (!Number.isSafeInteger(providerId) || providerId <= 0)
        return kit.refuse(
          c,
          `Location ${shopifyId}: the provider fulfillment location ID must be a whole number above 0.`,
        );
      map[shopifyId] = providerId;
    }
    const entered = formText(body.defaultLocationId);
    const fallback = entered === "" ? null : Number(entered);
    if (fallback !== null && (!Number.isSafeInteger(fallback) || fallback <= 0))
      return kit.refuse(c, "The default fulfillment location ID must be a whole number above 0.");
    await deps.service.saveLocations(c.get("shop"), map, fallback);
    return kit.saved(c, "locations");
  });
}
