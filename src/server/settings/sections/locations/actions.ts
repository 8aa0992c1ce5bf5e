import type { Hono } from "hono";
import { isShopifyId } from "../../../../shopify/payload-fields.ts";
import type { Env, SettingsRouteDeps } from "../../settings-guard.tsx";
import { formText, type SectionKit } from "../section.ts";

/** A provider fulfillment location ID as typed: a whole number above 0, or null. */
const locationId = (entered: string) => {
  const id = Number(entered);
  return /^\d+$/.test(entered) && Number.isSafeInteger(id) && id > 0 ? id : null;
};

/**
 * Each Shopify location's provider fulfillment location ID, and the default one. A value that is
 * not a whole number above 0 refuses the form with every value shown as typed and the field
 * marked (labelled with the location's name as the merchant knows it).
 */
export function locationsActions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps) {
  app.post("/locations", async (c) => {
    const body = await c.req.parseBody();
    const shop = c.get("shop");
    const map: Record<string, number> = {};
    const typedLocations: Record<string, string> = {};
    const bad: string[] = [];
    for (const [key, value] of Object.entries(body)) {
      if (!key.startsWith("location.")) continue;
      const shopifyId = key.slice("location.".length);
      if (!isShopifyId(shopifyId)) continue;
      const entered = formText(value);
      typedLocations[shopifyId] = entered;
      if (entered === "") continue;
      const providerId = locationId(entered);
      if (providerId === null) bad.push(shopifyId);
      else map[shopifyId] = providerId;
    }
    const enteredDefault = formText(body.defaultLocationId);
    const fallback = enteredDefault === "" ? null : locationId(enteredDefault);
    const typed = { locations: typedLocations, defaultLocationId: enteredDefault };
    if (bad.length > 0) {
      // The marked fields are labelled with the locations' names: the page reads Shopify's
      // locations once, for the section, not again for this message.
      return kit.refuse(
        c,
        `${bad.length === 1 ? "The fulfillment location ID marked below" : "The fulfillment location IDs marked below"} must be a whole number above 0, for example 12. Nothing was saved.`,
        { typed, field: bad.map((id) => `location-${id}`) },
      );
    }
    if (enteredDefault !== "" && fallback === null)
      return kit.refuse(
        c,
        "The default fulfillment location ID must be a whole number above 0, for example 12. Nothing was saved.",
        { typed, field: "defaultLocationId" },
      );
    await deps.service.saveLocations(shop, map, fallback);
    return kit.saved(c, "locations");
  });
}
